# Over 700 lines: every coherence rule lives here and only here (one readable statement).
"""Coherence state of one host allocation: which side holds the newest bytes of each range.

Pure bookkeeping, no numpy and no OpenCL: this module can be read and tested alone
(``tests/coherence/test_coherence_model.py`` checks it against a byte-level model).

The allocation's bytes ``[0, size)`` are cut into *segments*; each segment records the
set of *sides* holding its newest bytes: :data:`HOST` and the keys of devices with a
buffer over the allocation (an interval map with AdaptiveCpp-style validity sets).
A write on a side makes that side the only valid one for the written range; a transfer
adds its destination.  Neighbouring segments with the same set are merged, so whole-array
work keeps one segment (and one transfer per contiguous run).

Every rule of what must happen before an access lives here:

* ``plan_*`` and ``hazards_*`` say what must happen (which ranges to acquire, from which
  device; which ranges to publish; which in-flight launches to wait for);
* the past-tense methods (``acquired``, ``published``, ``host_written``,
  ``device_written`` ...) record that it happened;
* the fast-path flags: ``host_stale`` (a host read must ask first) and
  ``host_exclusive`` (a host write need not), kept by every method that changes the
  state, on the state itself and on its *owner* (the storage, whose flags every host
  access reads without the lock): no caller sets them.  Failed launches still to be
  reported (``unreported``) send every host access of the owner down the slow path.

The caller (:mod:`hostarray._storage`) performs the transfers and holds the lock.
Device keys and launch tokens are opaque: any hashable for a key, any object for a token.
One rule is assumed of every backend: an acquire from a device completes every launch
previously issued on that device (an in-order queue).
"""

from __future__ import annotations

import weakref
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["Coherence", "HOST", "Run", "ON_HOST_COMMIT"]


class _Host:
    __slots__ = ()

    def __repr__(self) -> str:
        return "HOST"


HOST: Hashable = _Host()
"""The host's side key (devices use their own keys)."""

Run = tuple[int, int, Hashable]
"""``(lo, hi, device)``: bytes ``[lo, hi)`` to move from or to ``device``."""

# an in-flight launch or transfer: (token, device key, lo, hi)
_Flight = tuple[Any, Hashable, int, int]
_HOST_ONLY = frozenset((HOST,))
_COMPACT_AT = 8  # in-flight entries before the per-device compaction
# Called with a number of bytes each time the host first touches memory of an allocation
# whose host memory is committed lazily (Coherence.device_result's commit_grain): the bytes
# newly committed, in whole grains.  hostarray._storage counts them in ha.stats().
ON_HOST_COMMIT: list[Callable[[int], None]] = []


class Coherence:
    """Validity per byte range, in-flight launches and escapes of one allocation.

    ``owner``, if given, is an object with ``host_stale`` and ``host_exclusive``
    attributes (weakly referenced): every method that changes the state sets them, to
    :attr:`host_stale` and :attr:`host_exclusive`, or to ``True`` and ``False`` while
    failed launches are still to be reported (:meth:`report_later`).

    Examples
    --------
    >>> from hostarray._coherence import Coherence
    >>> c = Coherence(16)
    >>> c.add_device("gpu")
    >>> c.plan_device_read("gpu", 0, 16)  # (acquires, publishes)
    ([], [(0, 16, 'gpu')])
    >>> c.published("gpu", 0, 16); c.device_written("gpu", 4, 8, token="launch-1")
    >>> c.host_stale, c.plan_host_read(0, 16)
    (True, [(4, 8, 'gpu')])
    """

    __slots__ = ("size", "_starts", "_valid", "devices", "inflight", "escapes",
                 "deferred_ends", "host_stale", "host_exclusive", "raw_blocks", "raw_detached",
                 "unreported", "deferred", "_owner", "commit_grain", "committed")

    def __init__(self, size: int, owner: Any = None) -> None:
        self.size = size
        # segment i is [_starts[i], _starts[i+1]) (the last ends at size); none if size 0
        self._starts: list[int] = [0] if size else []
        self._valid: list[frozenset[Hashable]] = [_HOST_ONLY] if size else []
        self.devices: dict[Hashable, None] = {}  # insertion-ordered set of device keys
        self.inflight: list[_Flight] = []
        self.escapes: list[tuple[int, int]] = []  # ranges raw views may write, one per view
        # open raw blocks that may write (hostptr.cl_buffer "w"/"rw"): (device key, lo, hi)
        self.raw_blocks: list[tuple[Hashable, int, int]] = []
        # those of them whose device buffer was let go meanwhile (free_buffer): their
        # writes are in a buffer hostarray no longer holds, and reach the host at the end
        self.raw_detached: list[tuple[Hashable, int, int]] = []
        # ends met while the lock was busy or this thread was inside an operation (a
        # finalizer): appended without a lock, applied by the storage later
        self.deferred_ends: deque[tuple[int, int]] = deque()
        # failed launches met while another failure was raised: one is raised at each of
        # the next host accesses (opaque tokens)
        self.unreported: list[Any] = []
        # launches recorded in ``inflight`` but not enqueued yet (see "Deferred launches")
        self.deferred: list[Any] = []
        # whether some byte's newest value is not on the host; whether the host holds every
        # byte alone, nothing in flight, no raw block open (host writes need not ask)
        self.host_stale = False
        self.host_exclusive = True
        self._owner: Any = None if owner is None else weakref.ref(owner)
        # host memory committed lazily (see "host memory" below): 0 for memory the host
        # already has, every state's but a device result's
        self.commit_grain = 0
        self.committed: list[tuple[int, int]] = []
        self._show()

    # -- the interval map ------------------------------------------------------
    def _clip(self, lo: int, hi: int) -> tuple[int, int]:
        lo = max(0, lo)
        return lo, max(lo, min(hi, self.size))

    def _end(self, i: int) -> int:
        return self._starts[i + 1] if i + 1 < len(self._starts) else self.size

    def _cut(self, pos: int) -> int:
        """Index of the segment starting at ``pos`` (splitting one if needed)."""
        starts = self._starts
        i = bisect_right(starts, pos) - 1
        if starts[i] != pos:
            i += 1
            starts.insert(i, pos)
            self._valid.insert(i, self._valid[i - 1])
        return i

    def _range(self, lo: int, hi: int) -> range:
        """Indices of the segments exactly covering ``[lo, hi)`` (cut at both ends)."""
        if lo >= hi:
            return range(0)
        i = self._cut(lo)
        j = self._cut(hi) if hi < self.size else len(self._starts)
        return range(i, j)

    def _segments(self, lo: int, hi: int) -> list[tuple[int, int, frozenset[Hashable]]]:
        """``(lo, hi, valid)`` of the parts of ``[lo, hi)``, without cutting."""
        lo, hi = self._clip(lo, hi)
        if lo >= hi:
            return []
        starts, valid = self._starts, self._valid
        i = bisect_right(starts, lo) - 1
        out = []
        while i < len(starts) and starts[i] < hi:
            out.append((max(lo, starts[i]), min(hi, self._end(i)), valid[i]))
            i += 1
        return out

    def _set(self, lo: int, hi: int, update: Any) -> None:
        """``valid = update(valid)`` over ``[lo, hi)``, then merge equal neighbours."""
        lo, hi = self._clip(lo, hi)
        idx = self._range(lo, hi)
        if not idx:
            return
        valid = self._valid
        for i in idx:
            valid[i] = update(valid[i])
        self._merge(max(0, idx.start - 1), min(len(valid), idx.stop + 1))

    def _merge(self, a: int, b: int) -> None:
        starts, valid = self._starts, self._valid
        i = max(a, 1)
        while i < min(b, len(starts)):
            if valid[i] == valid[i - 1]:
                del starts[i], valid[i]
                b -= 1
            else:
                i += 1

    @staticmethod
    def _runs(parts: list[tuple[int, int, Hashable]]) -> list[Run]:
        """Adjacent parts with the same device merged into one run."""
        out: list[Run] = []
        for lo, hi, key in parts:
            if out and out[-1][1] == lo and out[-1][2] == key:
                out[-1] = (out[-1][0], hi, key)
            else:
                out.append((lo, hi, key))
        return out

    def _source(self, valid: frozenset[Hashable]) -> Hashable:
        """A device holding a stale-on-host segment's newest bytes (first attached)."""
        for k in self.devices:
            if k in valid:
                return k
        raise AssertionError("coherence: no side holds the newest data")

    def _refresh(self) -> None:
        """The fast-path flags again, from the map (after every change of the state)."""
        valid = self._valid
        self.host_stale = any(HOST not in v for v in valid)
        self.host_exclusive = (not self.host_stale and not self.inflight
                               and not self.raw_blocks
                               and all(v == _HOST_ONLY for v in valid))
        self._show()

    def _show(self) -> None:
        """Set the owner's flags (every change of the flags or of ``unreported`` ends
        here): the host's fast paths test them without the lock."""
        ref = self._owner
        if ref is not None:
            owner = ref()
            if owner is not None:
                if self.unreported:  # failures to report: every host access asks
                    owner.host_stale, owner.host_exclusive = True, False
                else:
                    owner.host_stale, owner.host_exclusive = self.host_stale, self.host_exclusive

    # -- failed launches ----------------------------------------------------------
    def report_later(self, tokens: list[Any]) -> None:
        """Failed launches to raise at the next host accesses, one at each (the host's
        fast paths are closed until then)."""
        if tokens:
            self.unreported.extend(tokens)
            self._show()

    def take_unreported(self) -> list[Any]:
        """The failed launches still to be reported, forgotten here (the fast paths open
        again as the map allows)."""
        tokens, self.unreported = self.unreported, []
        self._show()
        return tokens

    def validity(self, lo: int = 0, hi: int | None = None
                 ) -> list[tuple[int, int, frozenset[Hashable]]]:
        """``(lo, hi, sides holding the newest bytes)`` of every segment, clipped to
        ``[lo, hi)`` (default: all; for tests and :mod:`hostarray._introspect`)."""
        return self._segments(lo, self.size if hi is None else hi)

    @classmethod
    def device_result(cls, size: int, key: Hashable, owner: Any = None,
                      commit_grain: int = 0) -> Coherence:
        """The state of a new allocation that a launch on ``key`` is about to write (a
        result or temporary of the device compute path): ``key``'s buffer holds its
        newest bytes, the host none.  Its contents mean nothing before that launch, so
        nothing is published for it; the same as :meth:`add_device` then
        :meth:`device_written` over every byte, without the launch's token.

        ``commit_grain`` > 0: the host memory is not committed yet, and is committed
        ``commit_grain`` bytes (a page) at a time as the host first touches it (see
        :meth:`host_touched`)."""
        c = cls(size)
        c.devices[key] = None
        if size:
            c._valid[0] = frozenset((key,))
        c.host_stale = bool(size)
        c.host_exclusive = False
        if commit_grain < 0:
            raise ValueError(f"commit_grain must be >= 0, got {commit_grain}")
        c.commit_grain = commit_grain if size else 0
        if owner is not None:
            c._owner = weakref.ref(owner)
            c._show()
        return c

    # -- host memory not committed yet ---------------------------------------------------
    #
    # A device result's host memory may be address space only (an anonymous mapping the OS
    # backs with pages on first touch): then nothing of it costs RAM until the host looks.
    # The state knows which grains the host has touched, so the storage can give exactly
    # those pages back when the memory is reused, and count what the host committed.  The
    # rule: every byte the host holds the newest value of, or has written (or may have: a
    # write that raised part-way), lies in a committed grain; the host's memory is touched
    # only by an acquire into it (:meth:`acquired`), a host write (:meth:`host_written`,
    # :meth:`host_write_failed`, :meth:`escape_begins`) or a buffer over the host memory
    # itself (the storage calls :meth:`host_touched` for one).  Nothing else commits it.
    def host_touched(self, lo: int, hi: int) -> None:
        """The host's memory of ``[lo, hi)`` is touched (read into, written, or used by a
        buffer over it): committed from now on, in whole :attr:`commit_grain` grains.
        Calls :data:`ON_HOST_COMMIT` with the bytes newly committed, if any; the
        tracking ends (``commit_grain`` 0) once every byte is committed."""
        g = self.commit_grain
        if not g:
            return
        lo, hi = self._clip(lo, hi)
        if lo >= hi:
            return
        lo -= lo % g
        hi = min(self.size, -(-hi // g) * g)
        added = hi - lo
        kept: list[tuple[int, int]] = []
        new_lo, new_hi = lo, hi
        for a, b in self.committed:  # disjoint and sorted: each overlap counted once
            if b < lo or hi < a:
                kept.append((a, b))
                continue
            added -= max(0, min(b, hi) - max(a, lo))
            new_lo, new_hi = min(new_lo, a), max(new_hi, b)
        kept.append((new_lo, new_hi))
        kept.sort()
        self.committed = kept
        if kept == [(0, self.size)]:
            self.commit_grain = 0  # all of it: nothing more to track
            self.committed = []
        if added:
            for hook in ON_HOST_COMMIT:
                hook(added)

    def committed_ranges(self) -> list[tuple[int, int]]:
        """The ranges ``[lo, hi)`` of the host memory committed (whole grains, sorted):
        all of it unless the memory is committed lazily (:attr:`commit_grain`)."""
        if not self.commit_grain:
            return [(0, self.size)] if self.size else []
        return list(self.committed)

    @property
    def committed_bytes(self) -> int:
        """Bytes of the host memory committed (:meth:`committed_ranges`)."""
        return sum(b - a for a, b in self.committed_ranges())

    # -- devices ----------------------------------------------------------------
    def add_device(self, key: Hashable) -> None:
        """A buffer was created on ``key``; it holds nothing yet."""
        self.devices.setdefault(key, None)
        self._refresh()

    def plan_forget(self, key: Hashable) -> list[Run]:
        """Ranges to acquire from ``key`` before its buffer may go (only it and other
        devices hold them newest, never the host)."""
        return self._runs([(lo, hi, key) for lo, hi, v in self._segments(0, self.size)
                           if key in v and HOST not in v])

    def forget_device(self, key: Hashable) -> None:
        """``key``'s buffer is gone (its launches were waited for, its newest ranges
        acquired)."""
        self.devices.pop(key, None)
        self.inflight = [f for f in self.inflight if f[1] != key]
        self._set(0, self.size, lambda v: v - {key} if key in v else v)
        self.raw_detached += [b for b in self.raw_blocks if b[0] == key]
        self._refresh()

    def is_current(self, key: Hashable, lo: int = 0, hi: int | None = None) -> bool:
        """Whether ``key`` holds the newest bytes of all of ``[lo, hi)`` (default: all)."""
        return all(key in v for _, _, v in self._segments(lo, self.size if hi is None else hi))

    # -- host reads ---------------------------------------------------------------
    def plan_host_read(self, lo: int, hi: int) -> list[Run]:
        """Ranges of ``[lo, hi)`` to acquire (and from which device) before the host
        reads them.  In-flight launches that only read need no wait."""
        if len(self._valid) == 1:  # one state over all the bytes (the common case)
            v = self._valid[0]
            lo, hi = self._clip(lo, hi)
            return [] if HOST in v or lo >= hi else [(lo, hi, self._source(v))]
        return self._runs([(a, b, self._source(v)) for a, b, v in self._segments(lo, hi)
                           if HOST not in v])

    def plan_explicit_acquire(self, key: Hashable, lo: int = 0,
                              hi: int | None = None) -> list[Run]:
        """Ranges of ``[lo, hi)`` (default: all) to acquire from ``key`` for
        ``acquire_device_writes``: those the host lacks and ``key`` holds newest."""
        return self._runs([(a, b, key) for a, b, v in
                           self._segments(lo, self.size if hi is None else hi)
                           if HOST not in v and key in v])

    def device_of(self, token: Any) -> Hashable | None:
        """The device of an in-flight launch or transfer (``None`` once forgotten)."""
        return next((f[1] for f in self.inflight if f[0] is token), None)

    def launches_on(self, key: Hashable) -> list[Any]:
        """Tokens of ``key``'s launches (and transfers) not yet known finished."""
        return [f[0] for f in self.inflight if f[1] == key]

    def acquired(self, key: Hashable, lo: int, hi: int) -> None:
        """The host now holds ``key``'s bytes ``[lo, hi)``; ``key``'s launches are done."""
        if self.commit_grain:
            self.host_touched(lo, hi)
        valid = self._valid
        if len(valid) == 1:  # one state over all the bytes (the common case): cut directly
            lo, hi = self._clip(lo, hi)
            v = valid[0]
            if lo < hi:
                if key not in v:
                    raise AssertionError("coherence: acquire from a device not holding the "
                                         "newest data")
                if HOST not in v:  # (else nothing changes: equal neighbours stay merged)
                    starts, parts = ([0], [v]) if lo > 0 else ([], [])
                    starts.append(lo)
                    parts.append(v | _HOST_ONLY)
                    if hi < self.size:
                        starts.append(hi)
                        parts.append(v)
                    self._starts[:] = starts
                    valid[:] = parts
            if self.inflight:
                self.inflight = [f for f in self.inflight if f[1] != key]
            self._refresh()
            return
        if any(key not in v for _, _, v in self._segments(lo, hi)):
            raise AssertionError("coherence: acquire from a device not holding the newest data")
        self._set(lo, hi, lambda v: v | _HOST_ONLY)
        self.inflight = [f for f in self.inflight if f[1] != key]
        self._refresh()

    # -- host writes --------------------------------------------------------------------
    def hazards_for_host_write(self, lo: int, hi: int) -> list[Any]:
        """Launches to wait for before the host writes ``[lo, hi)`` (they read or write it)."""
        return [f[0] for f in self.inflight if f[2] < hi and lo < f[3]]

    def plan_host_write(self, lo: int, hi: int, overwrites: bool) -> list[Run]:
        """Ranges to acquire before the host writes ``[lo, hi)``: none when the write
        ``overwrites`` every byte with a value evaluated beforehand."""
        return [] if overwrites else self.plan_host_read(lo, hi)

    def host_written(self, lo: int, hi: int) -> None:
        """The host wrote ``[lo, hi)`` (hazards waited for, stale bytes acquired)."""
        if self.commit_grain:
            self.host_touched(lo, hi)
        self.inflight = [f for f in self.inflight if not (f[2] < hi and lo < f[3])]
        self._set(lo, hi, lambda v: _HOST_ONLY)
        self._refresh()

    def host_write_failed(self, lo: int, hi: int, skipped_acquire: bool) -> None:
        """A host write of ``[lo, hi)`` raised part-way (numpy leaves what it wrote).

        Where the host held the newest bytes it may now hold part of the write: it
        becomes the newest there.  Where its acquire was skipped (a whole overwrite)
        the host's bytes were never current: the devices keep the newest data there.
        """
        if self.commit_grain:
            self.host_touched(lo, hi)  # numpy may have written any of it
        if skipped_acquire:
            self.host_may_have_written(lo, hi)
        else:
            self.host_written(lo, hi)

    def sides_current(self, lo: int, hi: int) -> frozenset[Hashable]:
        """The sides (``HOST``, device keys) holding the newest bytes of all of
        ``[lo, hi)`` (one lookup where one segment covers it: the placement rule of the
        device compute path asks this per operand)."""
        lo, hi = self._clip(lo, hi)
        if lo >= hi:
            return frozenset((HOST, *self.devices))
        starts, valid = self._starts, self._valid
        i = bisect_right(starts, lo) - 1
        common = valid[i]
        i += 1
        while i < len(starts) and starts[i] < hi:
            common = common & valid[i]
            i += 1
        return common

    def is_host_current(self, lo: int, hi: int) -> bool:
        """Whether the host holds the newest bytes of all of ``[lo, hi)``."""
        return all(HOST in v for _, _, v in self._segments(lo, hi))

    # -- raw exports ------------------------------------------------------------------------
    def escape_begins(self, lo: int, hi: int) -> None:
        """A raw view of ``[lo, hi)`` was handed out (its bytes acquired, its hazards
        waited for): the host may write there at any time."""
        self.escapes.append((lo, hi))
        self.host_written(lo, hi)

    def escape_ends(self, lo: int, hi: int) -> None:
        """A raw view of ``[lo, hi)`` died; it may have written."""
        self.escapes.remove((lo, hi))
        self.host_may_have_written(lo, hi)

    def host_may_have_written(self, lo: int, hi: int) -> None:
        """A raw view may have written ``[lo, hi)``: where the host holds the newest
        bytes, devices become stale; launches stay tracked."""
        self._set(lo, hi, lambda v: _HOST_ONLY if HOST in v else v)
        self._refresh()

    def raw_views_may_have_written(self) -> None:
        """Before a launch: every range a live raw view covers may have been written."""
        for lo, hi in self.escapes:
            self.host_may_have_written(lo, hi)

    def raw_block_opens(self, key: Hashable, lo: int, hi: int) -> None:
        """Raw code on ``key`` may write ``[lo, hi)`` until :meth:`raw_block_ends`: its
        writes are recorded then, over the whole range (it says no more).  Meanwhile the
        host holds nothing exclusively (every host write takes the checked path)."""
        self.raw_blocks.append((key, lo, hi))
        self._refresh()

    def raw_block_ends(self, key: Hashable, lo: int, hi: int, detached: bool = False) -> None:
        """A raw block ended (``detached``: its buffer was let go while it ran)."""
        self.raw_blocks.remove((key, lo, hi))
        if detached:
            self.raw_detached.remove((key, lo, hi))
        self._refresh()

    def raw_block_in_the_way(self, side: Hashable, lo: int, hi: int, writes: bool = True
                             ) -> tuple[Hashable, int, int] | None:
        """The open raw block (``(key, lo, hi)``) that an access to ``[lo, hi)`` by
        ``side`` (:data:`HOST` or a device key; ``writes``: it writes) would conflict
        with, or ``None``.

        The block's writes are recorded when it ends, over its whole range, as the newest
        bytes there.  A write on another side meanwhile can't be ordered with them (it would
        be lost): a conflict.  On the block's own device its queue orders launches with the
        raw code: no conflict (and :meth:`plan_device_read` publishes nothing over the
        block's bytes there), unless the block's buffer was let go (``raw_detached``): a
        launch there would use a new buffer without the raw code's bytes, and its writes
        would be overwritten when the block's land: a conflict, reads too.  Other reads see
        the bytes as they are (on a shared link, as the raw code leaves them)."""
        for block in self.raw_blocks:
            key, a, b = block
            if a < hi and lo < b:
                if key != side:
                    if writes:
                        return block
                elif block in self.raw_detached:
                    return block
        return None

    def _outside_own_raw_blocks(self, key: Hashable, parts: list[tuple[int, int, Any]]
                                ) -> list[tuple[int, int, Any]]:
        """``parts`` less the bytes open raw blocks on ``key`` hold: there ``key``'s buffer
        holds what the raw code writes (its newest bytes once the block ends), and a
        publish or acquire would overwrite it."""
        for block in self.raw_blocks:
            k, a, b = block
            if k != key or block in self.raw_detached:
                continue
            cut: list[tuple[int, int, Any]] = []
            for lo, hi, v in parts:
                if a < hi and lo < b:
                    if lo < a:
                        cut.append((lo, a, v))
                    if b < hi:
                        cut.append((b, hi, v))
                else:
                    cut.append((lo, hi, v))
            parts = cut
        return parts

    @property
    def escaped(self) -> bool:
        """Whether raw views that may write behind our back are alive."""
        return bool(self.escapes)

    def raw_views_reach(self, lo: int, hi: int) -> bool:
        """Whether a live raw view covers any byte of ``[lo, hi)``: a launch there must be
        done before the call returns (the raw view may write those bytes right after)."""
        return any(a < hi and lo < b for a, b in self.escapes)

    def plan_raw_view_acquire(self, lo: int, hi: int) -> list[Run]:
        """Ranges to acquire right after a launch wrote ``[lo, hi)``: the parts live raw
        views cover, so they see the result without asking.  The rest stays lazy (a
        hostarray read acquires it when it looks)."""
        parts = sorted((max(lo, a), min(hi, b)) for a, b in self.escapes if a < hi and lo < b)
        merged: list[tuple[int, int]] = []
        for a, b in parts:
            if merged and a <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
            else:
                merged.append((a, b))
        return self._runs([r for a, b in merged for r in self.plan_host_read(a, b)])

    # -- device reads and writes -------------------------------------------------------------
    def device_ready(self, key: Hashable, lo: int, hi: int, writes: bool = False) -> bool:
        """Whether a launch on ``key`` may read ``[lo, hi)`` (and, if ``writes``, write it)
        with nothing to do first: no raw view may have written since the last launch (no
        escape, none ending), ``key`` holds the newest bytes of all of it, and, for a
        write, no launch or transfer on another device still uses them.

        Then :meth:`raw_views_may_have_written` would change nothing,
        :meth:`plan_device_read` plans nothing and :meth:`hazards_for_device_write` names
        nothing: the launch path of an array that stays on its device skips them.
        ``False`` only says to ask them (it is also the answer wherever one segment does
        not cover the range)."""
        if self.escapes or self.deferred_ends or not 0 <= lo < hi <= self.size:
            return False
        starts = self._starts  # the segment holding lo must reach hi
        i = bisect_right(starts, lo) - 1
        if (i + 1 < len(starts) and starts[i + 1] < hi) or key not in self._valid[i]:
            return False
        return not writes or not self._used_elsewhere(key, lo, hi)

    def device_write_ready(self, key: Hashable, lo: int, hi: int) -> bool:
        """Whether a write-only launch on ``key`` over ``[lo, hi)`` has nothing to do
        first: no raw view may have written since the last launch (no escape, none
        ending), and no launch or transfer on another device still uses those bytes
        (then :meth:`hazards_for_device_write` names nothing)."""
        return not (self.escapes or self.deferred_ends or self._used_elsewhere(key, lo, hi))

    def _used_elsewhere(self, key: Hashable, lo: int, hi: int) -> bool:
        devices = self.devices
        if len(devices) == 1 and key in devices:
            return False  # in flight can only be what key's own queue runs
        for f in self.inflight:
            if f[2] < hi and lo < f[3] and f[1] is not key and f[1] != key:
                return True
        return False

    def plan_device_read(self, key: Hashable, lo: int, hi: int
                         ) -> tuple[list[Run], list[Run]]:
        """``(acquires, publishes)`` needed before a launch on ``key`` reads ``[lo, hi)``:
        what ``key`` lacks is published from the host, acquired there first where the
        host lacks it too; nothing where an open raw block on ``key`` holds the bytes (the
        launch reads what the raw code wrote, ordered by ``key``'s queue)."""
        parts = [(a, b, v) for a, b, v in self._segments(lo, hi) if key not in v]
        if parts and self.raw_blocks:
            parts = self._outside_own_raw_blocks(key, parts)
        acquires = self._runs([(a, b, self._source(v)) for a, b, v in parts if HOST not in v])
        return acquires, self._runs([(a, b, key) for a, b, _ in parts])

    def plan_explicit_publish(self, key: Hashable, lo: int, hi: int) -> list[Run]:
        """Ranges of ``[lo, hi)`` to publish to ``key`` for ``publish_host_writes``: all of
        it but the bytes open raw blocks on ``key`` hold (the raw code's are the newest
        there)."""
        return [(a, b, key) for a, b, _ in self._outside_own_raw_blocks(key, [(lo, hi, None)])]

    def hazards_for_device_write(self, key: Hashable, lo: int, hi: int) -> list[Any]:
        """Launches on *other* devices to wait for before a launch on ``key`` writes
        ``[lo, hi)``: ``key``'s own queue is in order, another device's is not ordered
        against it."""
        return [f[0] for f in self.inflight if f[1] != key and f[2] < hi and lo < f[3]]

    def device_invalidated(self, key: Hashable, lo: int = 0, hi: int | None = None) -> None:
        """``key``'s copy of ``[lo, hi)`` (default: all) may hold bytes nobody asked for
        (raw work that raised): it holds nothing trusted there where the host has the
        newest bytes.  Its launches were waited for."""
        self._set(lo, self.size if hi is None else hi,
                  lambda v: v - {key} if key in v and HOST in v else v)
        self.inflight = [f for f in self.inflight if f[1] != key]
        self._refresh()

    def published(self, key: Hashable, lo: int, hi: int, token: Any = None) -> None:
        """The host's bytes ``[lo, hi)`` were made visible on ``key``.

        ``token`` is the transfer still reading host memory, if any: a host write
        there must wait for it like for a launch that reads.
        """
        if any(HOST not in v for _, _, v in self._segments(lo, hi)):
            raise AssertionError("coherence: publish from a stale host")
        self._set(lo, hi, lambda v: v | {key})
        if token is not None:
            self._launched(token, key, lo, hi)
        self._refresh()

    def device_read_launched(self, key: Hashable, lo: int, hi: int, token: Any) -> None:
        """A launch on ``key`` reads ``[lo, hi)`` (a write-after-read hazard)."""
        self._launched(token, key, lo, hi)
        # the map is unchanged (host_stale too); something is in flight: not exclusive
        if self.host_exclusive:
            self.host_exclusive = False
            self._show()

    def device_written(self, key: Hashable, lo: int, hi: int, token: Any) -> None:
        """A launch on ``key`` writes ``[lo, hi)``: ``key`` is the only side holding it."""
        if 0 <= lo < hi <= self.size:
            starts = self._starts  # one segment covering [lo, hi) (as device_ready)
            i = bisect_right(starts, lo) - 1
            if i + 1 == len(starts) or starts[i + 1] >= hi:
                valid = self._valid[i]
                if len(valid) == 1:
                    (side,) = valid  # by identity: a key's __hash__ may be Python
                    if side is key:
                        # key alone held these bytes already (a kernel working on data
                        # that stays on its device): the map and host_stale are unchanged
                        inflight = self.inflight  # _launched, inlined
                        inflight.append((token, key, lo, hi))
                        if len(inflight) > _COMPACT_AT:
                            self._compact()
                        if self.host_exclusive:  # (never: the host lacks these bytes)
                            self.host_exclusive = False
                            self._show()
                        return
        only = frozenset((key,))
        self._set(lo, hi, lambda v: only)
        self._launched(token, key, lo, hi)
        self._refresh()

    def _launched(self, token: Any, key: Hashable, lo: int, hi: int) -> None:
        inflight = self.inflight
        inflight.append((token, key, lo, hi))
        if len(inflight) > _COMPACT_AT:
            self._compact()

    def _compact(self) -> None:
        """A device's queue is in order: its newest token covers the older ones, over the
        union of their ranges.  Without this, an array only ever read by kernels (never
        waited for) collects one token per launch.  (A list searched by identity first: a
        device key's ``__hash__`` may be Python.)"""
        merged: list[_Flight] = []
        deferred = self.deferred
        for t, k, a, b in self.inflight:
            if deferred and any(t is d for d in deferred):
                # enqueued later than it was recorded (or not yet): the queue's order does
                # not put it before the tokens recorded after it, nor after those before
                merged.append((t, k, a, b))
                continue
            for j, m in enumerate(merged):
                if any(m[0] is d for d in deferred):
                    continue
                if m[1] is k or m[1] == k:
                    merged[j] = (t, k, min(a, m[2]), max(b, m[3]))
                    break
            else:
                merged.append((t, k, a, b))
        self.inflight = merged

    # -- deferred launches ----------------------------------------------------------------
    # A deferred launch (a pending expression of the device path) is recorded as reader and
    # writer of its bytes like any launch (``device_read_launched``, ``device_written``), so
    # that every rule above applies to it: a host write waits for it, a host read of what it
    # writes acquires after it.  Its command is enqueued later, when something needs it
    # (its token's ``wait()`` enqueues it first).  Two rules differ from an enqueued
    # launch's, and the caller keeps them: before an acquire from a device, and before
    # another command on that device's in-order queue that reads what a deferred launch
    # writes (or writes what it uses), the deferred launches named here are enqueued
    # first; and ``_compact`` never merges one (its place in the queue is not its place in
    # ``inflight``).
    def deferred_launch(self, token: Any) -> None:
        """``token``, just recorded over some of these bytes, is not enqueued yet."""
        self.deferred.append(token)

    def forget_deferred(self, tokens: list[Any]) -> None:
        """``tokens`` (deferred launches) are finished or will never run (nobody can see
        what they write any more): forgotten, from ``inflight`` too."""
        self.deferred = [d for d in self.deferred if all(d is not t for t in tokens)]
        self.inflight = [f for f in self.inflight if all(f[0] is not t for t in tokens)]
        self._refresh()

    def drop_launches(self, tokens: list[Any]) -> None:
        """Forget ``tokens`` (launches that failed: reported once, not waited for again)."""
        self.inflight = [f for f in self.inflight if all(f[0] is not d for d in tokens)]
        self._refresh()

    def __repr__(self) -> str:
        segs = ", ".join(f"[{a},{b}):{'+'.join(sorted(map(str, v))) or '-'}"
                         for a, b, v in self.validity())
        return (f"Coherence(size={self.size}, {segs or 'empty'}, "
                f"inflight={len(self.inflight)}, escapes={len(self.escapes)})")
