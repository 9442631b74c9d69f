"""Aligned host storage: one ``Storage`` record per allocation.

An array and all its views share one ``Storage``.  It owns (or borrows) the
numpy memory, the device buffers created over it, the lock and the
coherence state, and it performs the transfers that
:class:`~hostarray._coherence.Coherence` plans, range by range (every rule of
what moves, and when, lives there).  Device buffers are opaque objects with
``publish(lo, hi)``, ``acquire(lo, hi)`` and ``release()`` (see
:mod:`hostarray.backends`), so this module needs numpy only.
"""

from __future__ import annotations

import array
import ctypes
import mmap
import sys
import threading
import warnings
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any

import numpy as np

from ._coherence import HOST, Coherence, Run
from ._stats import COUNTERS
from .errors import InUse, LaunchFailed

__all__ = ["PAGE_SIZE", "PAD", "Storage", "HostWrite", "UserMemory", "aligned_empty",
           "address_of", "byte_bounds", "host_writes"]

PAGE_SIZE = mmap.PAGESIZE
# Called with a device key after the host acquired from that device (so every launch
# issued there before has finished); hostarray.kernels lets go of finished launches.
AFTER_DEVICE_SYNC: list[Callable[[Hashable], None]] = []
# Called as hook(storage, "acquire" | "publish", runs, refusable) before a transfer moves a byte;
# hostarray._guard (the transfer guard) logs it, or refuses it by raising: nothing changed.
BEFORE_TRANSFER: list[Callable[[Storage, str, list[Run], bool], None]] = []
PAD = 64  # allocations are padded to a multiple of a cache line


def address_of(a: np.ndarray) -> int:
    """Address of the first byte of ``a``."""
    return a.__array_interface__["data"][0]


def byte_bounds(a: np.ndarray) -> tuple[int, int]:
    """``(first, end)`` addresses of the bytes ``a`` covers (empty for zero elements)."""
    lo = address_of(a)
    if not a.size:
        return lo, lo
    hi = lo + a.itemsize
    for n, st in zip(a.shape, a.strides):
        if st < 0:
            lo += st * (n - 1)
        else:
            hi += st * (n - 1)
    return lo, hi


def aligned_empty(nbytes: int) -> np.ndarray:
    """Uninitialised ``uint8`` memory starting on a page boundary.

    The returned array has exactly ``nbytes`` elements; the allocation
    behind it is padded to a multiple of :data:`PAD` bytes (at least one
    pad) so a device may round accesses up without leaving the allocation.
    """
    padded = max(PAD, -(-nbytes // PAD) * PAD)
    raw = np.empty(padded + PAGE_SIZE, dtype=np.uint8)
    start = -address_of(raw) % PAGE_SIZE
    # slice the padded range first: numpy gives an empty slice of raw the base's address
    return raw[start:start + padded][:nbytes]


def _status(token: Any) -> int:
    """A launch token's OpenCL status (0 complete, > 0 pending, < 0 failed); after a device
    fault, the driver's error when asked (NVIDIA answers -9999 for an event once a kernel
    made an illegal access)."""
    try:
        return int(getattr(token, "command_execution_status", 0))
    except Exception as e:
        code = getattr(e, "code", None)
        return code if isinstance(code, int) and code < 0 else -1


class UserMemory:
    """The base object of a storage over memory the user already had (adopted, not copied).

    The user may still hold the adopted array, or a view of it, and write it
    behind hostarray's back: such a storage counts as escaped while
    :meth:`alive` (see the coherence model).  hostarray's own views of the
    storage refer to this object, not to the user's array, so the reference
    counts of the user's objects say whether anybody else still holds them.
    """

    __slots__ = ("__array_interface__", "array", "__weakref__")

    def __init__(self, a: np.ndarray) -> None:
        self.__array_interface__ = a.__array_interface__
        self.array = a

    def alive(self) -> bool:
        """Whether anything but hostarray may still reach the adopted memory (CPython
        reference counts; ``True`` whenever that can't be told)."""
        if not _REFCOUNTS_WORK:
            return True
        obj: Any = self.array
        while True:
            # self.array or the child's .base / .obj, the local name, getrefcount's argument
            if sys.getrefcount(obj) > 3:
                return True
            if isinstance(obj, np.ndarray):
                if obj.base is None:
                    return False  # numpy's own memory, held by nobody else
                obj = obj.base
            elif isinstance(obj, memoryview):
                obj = obj.obj
            else:
                # the owner of the memory, held by nobody else if it is a plain buffer type;
                # any other owner (a DLPack capsule's manager...) may be reachable from the
                # user's side in ways reference counts don't show: assume it is
                return not isinstance(obj, _PLAIN_OWNERS)


_PLAIN_OWNERS = (bytes, bytearray, mmap.mmap, array.array, ctypes.Array)


def _check_refcounts() -> bool:
    """Whether :meth:`UserMemory.alive` reads this interpreter's reference counts right."""
    try:
        root = np.zeros(4)
        held = root[1:]
        m = UserMemory(held)
        if not m.alive():
            return False
        del root
        if not m.alive():  # held's base is still reachable through `held` only... and held
            return False
        del held
        return not m.alive()
    except Exception:
        return False


_REFCOUNTS_WORK = True
_REFCOUNTS_WORK = _check_refcounts()


_LOCK_CREATION = threading.Lock()


def _owned(lock: Any) -> bool:
    """Whether this thread holds ``lock`` (an ``RLock``; ``False`` where that can't be
    asked)."""
    owned = getattr(lock, "_is_owned", None)
    return bool(owned()) if owned is not None else False
# shared and read-only; typed as the dict that replaces it before any buffer is added
_NO_BUFFERS: dict[Hashable, Any] = MappingProxyType({})  # type: ignore[assignment]


class Storage:
    """One host allocation, its device buffers and its coherence state.

    ``base`` is the numpy array over the whole allocation: a C-contiguous
    ``uint8`` array for storage hostarray allocated, or the numpy array a
    user handed in (then possibly non-contiguous: such storage can't get a
    device buffer).
    """

    __slots__ = ("base", "_lock", "coh", "buffers", "host_stale", "host_exclusive",
                 "user", "unreported", "_address", "__weakref__")

    def __init__(self, base: np.ndarray, user: UserMemory | None = None) -> None:
        # Every array operation makes a Storage for its result: the lock and the
        # buffer dict are created only when a device or a thread needs them.
        self.base = base
        self._lock: threading.RLock | None = None
        # created on the first device buffer (or escape); typed without ``None``: every
        # method using it is reached only once a buffer exists or tests for ``None`` first
        self.coh: Coherence = None  # type: ignore[assignment]
        self.buffers: dict[Hashable, Any] = _NO_BUFFERS
        # Mirrors of the coherence flags, read without the lock on every access.
        self.host_stale = False
        self.host_exclusive = True
        # memory the user handed in and may still write (an escape while they hold it)
        self.user = user
        # failed launches met with another failure: raised at the next host accesses
        self.unreported: list[Any] = []
        self._address = 0  # base's address, found on first use (0: not yet)

    @classmethod
    def over_user_memory(cls, a: np.ndarray) -> Storage:
        """A storage over the user's array ``a`` itself (no copy)."""
        user = UserMemory(a)
        return cls(np.asarray(user), user)

    def _new_coherence(self) -> Coherence:
        coh = self.coh = Coherence(self.base.nbytes)
        if self.user is not None:
            coh.escape_begins(0, coh.size)  # the user's own array may be written at any time
        return coh

    def _check_foreign(self) -> None:
        """End the user-memory escape once nobody but hostarray holds that memory."""
        user = self.user
        if user is not None and self.coh is not None and not user.alive():
            self.user = None
            self.coh.escape_ends(0, self.coh.size)

    @property
    def lock(self) -> threading.RLock:
        """The storage's lock (re-entrant), created on first use."""
        lock = self._lock
        if lock is None:
            with _LOCK_CREATION:
                if self._lock is None:
                    self._lock = threading.RLock()
                lock = self._lock
        return lock

    # -- the memory -------------------------------------------------------------
    @property
    def nbytes(self) -> int:
        return self.base.nbytes

    @property
    def address(self) -> int:
        """Address of the allocation's first byte (the base never changes: kept)."""
        addr = self._address
        if not addr:
            addr = self._address = address_of(self.base)
        return addr

    def byte_range(self, view: np.ndarray | None) -> tuple[int, int]:
        """``[lo, hi)``: the bytes of the allocation ``view`` covers (all for ``None``)."""
        if view is None:
            return 0, self.base.nbytes
        lo, hi = byte_bounds(view)
        base = self.address
        return lo - base, hi - base

    def contiguous_bytes(self) -> np.ndarray | None:
        """The allocation as one ``uint8`` array, or ``None`` if it is not one range."""
        b = self.base
        if not (b.flags.c_contiguous or b.flags.f_contiguous):
            return None
        if b.dtype == np.uint8 and b.ndim == 1:
            return b
        return b.reshape(-1, order="A").view(np.uint8)

    # -- device buffers ------------------------------------------------------------
    def _mirror(self) -> None:
        c = self.coh
        if self.unreported:  # failures still to report send every host access down the slow path
            self.host_stale, self.host_exclusive = True, False
        else:
            self.host_stale, self.host_exclusive = c.host_stale, c.host_exclusive

    def _report_pending(self) -> None:
        """Raise the next failed launch not reported yet (one per host access)."""
        tokens, self.unreported = self.unreported, []
        self._mirror()
        self._raise_if_failed(tokens, None)

    def add_buffer(self, key: Hashable, buffer: Any) -> None:
        """Record ``buffer`` as this storage's copy on device ``key``."""
        with self.lock:
            if self.coh is None:
                self._new_coherence()
            if self.buffers is _NO_BUFFERS:
                self.buffers = {}
            self.buffers[key] = buffer
            self.coh.add_device(key)
            self._mirror()

    def add_result_buffer(self, key: Hashable, buffer: Any) -> None:
        """Record ``buffer`` as the only copy of a new storage that a launch on ``key``
        writes next (:meth:`Coherence.device_result`): nobody else reaches the storage
        yet, so no lock is taken."""
        if self.coh is not None or self.user is not None:
            raise AssertionError("add_result_buffer: the storage is not new")
        self.coh = Coherence.device_result(self.base.nbytes, key)
        self.buffers = {key: buffer}
        self._mirror()

    def free_buffer(self, key: Hashable) -> bool:
        """Drop ``key``'s buffer, acquiring first if it holds the newest data."""
        with self.lock:
            buf = self.buffers.get(key)
            if buf is None:
                return False
            coh = self.coh
            runs = coh.plan_forget(key)
            if runs:
                self._acquire(runs)  # finishes key's launches too (an in-order queue)
            else:
                self._wait_for(coh.launches_on(key))
            del self.buffers[key]
            coh.forget_device(key)
            self._mirror()
        buf.release()
        return True

    # -- transfers -------------------------------------------------------------------
    def _acquire(self, runs: list[Run], refusable: bool = True) -> None:
        """Acquire each run ``(lo, hi, device)`` (one transfer each).  ``refusable``: a
        transfer guard may refuse it (not once a launch that needs it is enqueued)."""
        for guard in BEFORE_TRANSFER:
            guard(self, "acquire", runs, refusable)
        for lo, hi, key in runs:
            launches = self.coh.launches_on(key)
            if any(_status(t) > 0 for t in launches):
                COUNTERS.add(waits=1)  # the acquire blocks until these launches finish
            try:
                moved = self.buffers[key].acquire(lo, hi)
            except Exception:
                # a launch that failed explains a failed transfer (NVIDIA refuses every
                # command on a queue after a kernel fault): raise that, typed, once
                self._raise_if_failed(launches, key)
                raise
            self.coh.acquired(key, lo, hi)
            COUNTERS.add(acquires=1, bytes_acquired=moved)
            for hook in AFTER_DEVICE_SYNC:
                hook(key)
            self._raise_if_failed(launches, key)

    def _publish(self, runs: list[Run]) -> None:
        """Publish each run ``(lo, hi, device)`` (one transfer each)."""
        for guard in BEFORE_TRANSFER:
            guard(self, "publish", runs, True)
        for lo, hi, key in runs:
            token, moved = self.buffers[key].publish(lo, hi)
            self.coh.published(key, lo, hi, token)
            COUNTERS.add(publishes=1, bytes_published=moved)

    def _wait_for(self, tokens: list[Any]) -> None:
        if tokens:
            for t in tokens:
                try:
                    t.wait()
                except Exception:  # a failed launch: its status is checked below
                    pass
            COUNTERS.add(waits=1)
            self._raise_if_failed(tokens, None)

    def _raise_if_failed(self, tokens: list[Any], key: Hashable | None) -> None:
        """Report launches the device marked failed (a negative status), once.

        Failed tokens are forgotten here, reported or not.  A token of a kernel
        launch (``hostarray.kernels``) names its ``kernel`` and ``device`` and is
        shared by every storage the launch used and by its ``Launch``: its
        ``claim_report()`` says whether the failure is still to be raised, so a
        launch's failure is raised once, by whichever access or ``Launch.wait()``
        meets it first.  Other tokens (a transfer, raw pyopencl work) belong to
        this storage alone."""
        status = _status
        failed = [t for t in tokens if status(t) < 0]
        if not failed:
            return
        coh = self.coh
        where = {id(t): coh.device_of(t) for t in failed}
        coh.drop_launches(failed)
        self._mirror()
        # a kernel's failure first: after a fault some drivers fail every later command,
        # and answer for any event with the fault's status (NVIDIA: -9999)
        failed.sort(key=lambda t: getattr(t, "kernel", None) is None)
        for i, t in enumerate(failed):
            claim = getattr(t, "claim_report", None)
            if claim is not None and not claim():
                continue  # raised already (Launch.wait or another array of the launch)
            # one error at a time: the other failed launches at the next host accesses
            self.unreported.extend(f for f in failed[i + 1:] if hasattr(f, "claim_report"))
            self._mirror()
            device = getattr(t, "device", None) or key or where.get(id(t)) or "the device"
            kernel = getattr(t, "kernel", None)
            what = None if kernel else "a transfer or raw pyopencl command"
            raise LaunchFailed(device, status(t), what, kernel)

    # -- the hooks every host access goes through ---------------------------------------
    def sync_for_host_read(self, view: np.ndarray | None = None) -> None:
        """Make the host current for the bytes ``view`` covers (all for ``None``):
        acquire the stale ranges among them, and nothing else."""
        self.sync_range_for_host_read(*self.byte_range(view))

    def sync_range_for_host_read(self, lo: int, hi: int) -> None:
        """:meth:`sync_for_host_read` of the bytes ``[lo, hi)`` of the allocation."""
        with self.lock:
            if self.unreported:
                self._report_pending()
            coh = self.coh
            if coh is not None and coh.host_stale:
                runs = coh.plan_host_read(lo, hi)
                if runs:
                    self._acquire(runs)
                    self._mirror()

    def host_write(self, whole: bool = False, view: np.ndarray | None = None) -> HostWrite:
        """A host write of the bytes ``view`` covers (all for ``None``) as one
        transaction: ``with storage.host_write(whole, view) as v: <write v>``.

        On entry (under the storage's lock, held to the end): wait for launches
        that use those bytes, and acquire their stale parts unless ``whole``.  On a
        normal exit the host becomes the only side holding them.  If the write
        raises, a skipped acquire is not recorded as a write (the device keeps the
        newest data; see :meth:`Coherence.host_write_failed`).

        ``whole`` is the caller's promise that the write overwrites every byte
        ``view`` covers (a contiguous view) *and* that its value was fully
        evaluated beforehand (nothing about the old contents can still be read
        by it)."""
        return HostWrite(self, whole, view)

    def _begin_host_write(self, w: HostWrite) -> None:
        """Sets ``w.mode``: 0 nothing to record; 1 recorded on success; 2 acquire skipped."""
        coh = self.coh
        if coh is None or self.host_exclusive:
            w.mode = 0
            return
        self.refuse_host_write(w.view)
        if self.unreported:
            self._report_pending()
        lo, hi = w.lo, w.hi = self.byte_range(w.view)
        self._wait_for(coh.hazards_for_host_write(lo, hi))
        whole = w.whole
        if whole and coh.host_stale and numpy_may_raise_late():
            # numpy may raise after writing some or all of the range: then only a host
            # holding the newest bytes around what it wrote gives numpy's result
            whole = False
        runs = coh.plan_host_write(lo, hi, overwrites=whole)
        if runs:
            self._acquire(runs)
        w.mode = 2 if whole and not coh.is_host_current(lo, hi) else 1

    def _end_host_write(self, w: HostWrite, ok: bool) -> None:
        coh = self.coh
        if ok:
            coh.host_written(w.lo, w.hi)
        else:
            coh.host_write_failed(w.lo, w.hi, skipped_acquire=w.mode == 2)
        self._mirror()

    def begin_escape(self, view: np.ndarray | None = None) -> tuple[int, int]:
        """A raw view of ``view``'s bytes (all for ``None``) that may be written behind
        our back is handed out; returns the range to pass to :meth:`end_escape`."""
        with self.lock:
            coh = self.coh
            if coh is None:
                coh = self._new_coherence()
            lo, hi = self.byte_range(view)
            self._wait_for(coh.hazards_for_host_write(lo, hi))
            runs = coh.plan_host_read(lo, hi)
            if runs:
                self._acquire(runs)
            coh.escape_begins(lo, hi)
            self._mirror()
            return lo, hi

    def end_escape(self, lo: int, hi: int) -> None:
        # Runs from a finalizer, possibly inside the garbage collector at any allocation:
        # while this thread holds another storage's lock (never wait for this one: a
        # lock-order deadlock with a launch locking both), or while this thread is in the
        # middle of an operation on this very storage (the lock is re-entrant: changing
        # the state now would pull it from under that operation, e.g. skip a live raw
        # view's range in a loop over the escapes).  Then the end is deferred, without a
        # lock (a deque's append is atomic), and the next launch or end applies it.
        lock = self.lock
        if _owned(lock) or not lock.acquire(blocking=False):
            self.coh.deferred_ends.append((lo, hi))
            return
        try:
            self.coh.escape_ends(lo, hi)
            self._apply_deferred_ends()
            self._mirror()
        finally:
            lock.release()

    def _apply_deferred_ends(self) -> None:
        ends = self.coh.deferred_ends
        while ends:
            try:
                lo, hi = ends.popleft()
            except IndexError:  # emptied meanwhile
                break
            self.coh.escape_ends(lo, hi)

    @property
    def escaped(self) -> bool:
        return self.coh is not None and self.coh.escaped

    # -- used by launches (hostarray.kernels), under self.lock --------------------------
    def _before_launch(self) -> Coherence:
        coh = self.coh
        self._apply_deferred_ends()
        self._check_foreign()
        if coh.escaped:
            coh.raw_views_may_have_written()  # a raw view may have written since
        return coh

    def refuse_in_use(self, side: Hashable, lo: int, hi: int, what: str,
                      writes: bool = True) -> None:
        """Raise :class:`~hostarray.errors.InUse` where an access by ``side`` to bytes
        ``[lo, hi)`` (``writes``: a write) conflicts with an open raw block (see
        :meth:`Coherence.raw_block_in_the_way`); before anything changed.  Costs one
        attribute test while no block is open."""
        coh = self.coh
        if coh is None or not coh.raw_blocks:
            return
        block = coh.raw_block_in_the_way(side, lo, hi, writes)
        if block is not None:
            raise InUse(block[0], (block[1], block[2]), what)

    def refuse_host_write(self, view: np.ndarray | None) -> None:
        """:meth:`refuse_in_use` for a host write of the bytes ``view`` covers (all for
        ``None``): every host write path calls it before it reads anything."""
        coh = self.coh
        if coh is not None and coh.raw_blocks:
            self.refuse_in_use(HOST, *self.byte_range(view), "a host write")

    def open_raw_block(self, key: Hashable, lo: int, hi: int) -> None:
        """A ``cl_buffer`` block on ``key`` that may write ``[lo, hi)`` opened (under the lock)."""
        self.coh.raw_block_opens(key, lo, hi)
        self._mirror()

    def end_raw_block(self, key: Hashable, lo: int, hi: int, detached: bool = False) -> None:
        self.coh.raw_block_ends(key, lo, hi, detached)
        self._mirror()

    def prepare_device_read(self, key: Hashable, lo: int, hi: int,
                            writes: bool = False) -> None:
        """Before a launch on ``key`` reads bytes ``[lo, hi)``: publish what ``key``
        lacks there (acquiring it elsewhere first where the host lacks it too).

        ``writes``: the launch also writes, so launches on other devices that
        still use those bytes are waited for (their queues are not ordered with
        ``key``'s)."""
        if self.user is None and self.coh.device_ready(key, lo, hi, writes):
            return  # nothing to publish, acquire or wait for (Coherence.device_ready)
        coh = self._before_launch()
        if writes:
            self._wait_for(coh.hazards_for_device_write(key, lo, hi))
        acquires, publishes = coh.plan_device_read(key, lo, hi)
        if acquires:
            self._acquire(acquires)
        if publishes:
            self._publish(publishes)
        self._mirror()

    def prepare_device_write(self, key: Hashable, lo: int, hi: int) -> None:
        """Before a write-only launch on ``key`` over ``[lo, hi)``: publish nothing;
        wait for launches on other devices that still use those bytes (this device's
        queue does not order against theirs)."""
        if self.user is None and self.coh.device_write_ready(key, lo, hi):
            return  # nothing to wait for (Coherence.device_write_ready)
        coh = self._before_launch()
        self._wait_for(coh.hazards_for_device_write(key, lo, hi))

    def record_launch(self, key: Hashable, token: Any, lo: int, hi: int,
                      writes: bool) -> None:
        """A launch on ``key`` was enqueued, reading (and if ``writes``, writing) ``[lo, hi)``."""
        coh = self.coh
        if writes:
            coh.device_written(key, lo, hi, token)
        else:
            coh.device_read_launched(key, lo, hi, token)
        if coh.escapes:
            if writes:
                # raw views must see the result (only the bytes they cover)
                self._acquire(coh.plan_raw_view_acquire(lo, hi), refusable=False)
            elif coh.raw_views_reach(lo, hi):
                # a raw view may be written right after this call: the launch (and
                # its publish, a copy still reading host memory) must be done first
                self._wait_for([token])
        self._mirror()

    # -- explicit hostptr operations ---------------------------------------------------
    def publish_explicit(self, key: Hashable, view: np.ndarray | None = None) -> None:
        """Copy the newest data of the bytes ``view`` covers (all for ``None``) into
        ``key``'s buffer now (one publish, less the bytes an open raw block on ``key``
        holds: its raw code's are the newest there).

        Device writes not read back yet are kept on every link: the host acquires
        them first (newest wins), then publishes."""
        with self.lock:
            if key not in self.buffers:
                return
            coh = self._before_launch()
            lo, hi = self.byte_range(view)
            if lo >= hi:
                return
            runs = coh.plan_host_read(lo, hi)
            if runs:
                self._acquire(runs)
            runs = coh.plan_explicit_publish(key, lo, hi)
            if runs:
                self._publish(runs)
            self._mirror()

    def acquire_explicit(self, key: Hashable, view: np.ndarray | None = None) -> None:
        """Make the writes of ``key``'s launches issued so far to the bytes ``view``
        covers (all for ``None``) visible on the host."""
        with self.lock:
            if key not in self.buffers:
                return
            runs = self.coh.plan_explicit_acquire(key, *self.byte_range(view))
            if runs:
                self._acquire(runs)
                self._mirror()

    def take_detached_writes(self, buf: Any, lo: int, hi: int) -> None:
        """Raw work wrote bytes ``[lo, hi)`` of ``buf``, a buffer freed meanwhile: the host
        takes them (one acquire, after the launches still using those host bytes)."""
        with self.lock:
            coh = self.coh
            self._wait_for(coh.hazards_for_host_write(lo, hi))
            moved = buf.acquire(lo, hi)  # after everything on the queue, the block's work too
            COUNTERS.add(acquires=1, bytes_acquired=moved)
            coh.host_written(lo, hi)
            self._mirror()

    def is_current(self, key: Hashable, lo: int, hi: int) -> bool:
        """Whether ``key`` holds the newest bytes of ``[lo, hi)``."""
        return self.coh.is_current(key, lo, hi)

    def discard_raw_use(self, key: Hashable, token: Any, lo: int = 0,
                        hi: int | None = None) -> None:
        """Raw pyopencl work on ``key`` over bytes ``[lo, hi)`` (default: all) raised: wait
        for what it enqueued, and let ``key``'s copy of them hold nothing trusted (the
        host keeps its data)."""
        with self.lock:
            self._wait_for([token])
            self.coh.device_invalidated(key, lo, hi)
            self._mirror()


class HostWrite:
    """Context manager of :meth:`Storage.host_write`; ``__enter__`` returns ``view``."""

    __slots__ = ("storage", "whole", "view", "mode", "lo", "hi")

    def __init__(self, storage: Storage, whole: bool, view: Any = None) -> None:
        self.storage = storage
        self.whole = whole
        self.view = view
        self.mode = 0
        self.lo = self.hi = 0

    def __enter__(self) -> Any:
        s = self.storage
        lock = s.lock
        lock.acquire()
        try:
            s._begin_host_write(self)
        except BaseException:
            lock.release()
            raise
        return self.view

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        s = self.storage
        try:
            if self.mode:
                s._end_host_write(self, exc_type is None)
        finally:
            s.lock.release()


def numpy_may_raise_late() -> bool:
    """Whether numpy may raise, or run Python code, *after* writing (part of) an
    operation's output: its floating-point checks run once the loop is done, and raise
    when ``np.errstate`` says ``raise`` (or call back: ``call``, ``log``), when a warnings
    filter makes the ``RuntimeWarning`` an exception, or hand it to a replaced
    ``warnings.showwarning`` (code that may read the array being written).  A whole
    overwrite that skipped the acquire of stale device bytes could not tell then what
    numpy wrote (and a read from that code would acquire over it), so such writes
    acquire first."""
    if any(v in ("raise", "call", "log") for v in np.geterr().values()):
        return True
    if warnings.showwarning is not _SHOWWARNING:
        return True
    return any(f[0] == "error" and issubclass(RuntimeWarning, f[2]) for f in warnings.filters)


_SHOWWARNING = getattr(warnings, "_showwarning_orig", warnings.showwarning)


@contextmanager
def host_writes(writes: Iterable[HostWrite]) -> Iterator[list[Any]]:
    """Enter several :class:`HostWrite` transactions (locks in one global order);
    yields their views."""
    writes = list(writes)
    with locked(w.storage for w in writes):
        entered: list[HostWrite] = []
        try:
            views = []
            for w in writes:
                views.append(w.__enter__())
                entered.append(w)
            yield views
        except BaseException:
            et, ev, tb = sys.exc_info()
            for w in reversed(entered):
                w.__exit__(et, ev, tb)
            raise
        else:
            for w in reversed(entered):
                w.__exit__(None, None, None)


class locked:  # noqa: N801 - used like a function: ``with locked(storages):``
    """Hold the locks of ``storages`` (in one global order: no lock-order deadlock).

    A host write holds its storage's lock from the coherence check to the last
    byte written, so another thread's whole-storage publish or acquire can't
    interleave with it (the write would be lost on a copied or mapped link).
    A class rather than a generator: launches and writes enter it on every call."""

    __slots__ = ("ordered",)

    def __init__(self, storages: Iterable[Storage]) -> None:
        if type(storages) is list and len(storages) == 2:  # a launch's usual case
            a, b = storages
            self.ordered = [a] if a is b else [a, b] if id(a) < id(b) else [b, a]
            return
        unique = {id(s): s for s in storages}
        self.ordered = [unique[k] for k in sorted(unique)] if len(unique) > 1 \
            else list(unique.values())

    def __enter__(self) -> None:
        taken: list[Storage] = []
        try:
            for s in self.ordered:
                s.lock.acquire()
                taken.append(s)
        except BaseException:
            for s in reversed(taken):
                s.lock.release()
            raise

    def __exit__(self, *exc: Any) -> None:
        for s in reversed(self.ordered):
            s.lock.release()
