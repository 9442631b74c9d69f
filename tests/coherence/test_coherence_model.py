"""``hostarray._coherence`` alone, against a byte-level model (no device, no numpy).

A hypothesis state machine drives :class:`Coherence` the way ``_storage`` does: it asks
for a plan, performs it on simulated memories (one list of byte values per side: the host
and two devices), and records what happened.  The oracle knows the newest value of every
byte (``truth``: every write stores fresh, unique values), so

* every read (host or device) must see ``truth`` after its plan ran: a missing acquire or
  publish is a wrong value;
* every side the coherence state calls valid for a byte must hold ``truth`` there (the
  state never claims validity that is not there);
* every launch still running that overlaps a host write (or, on another device, a device
  write) must be covered by a returned hazard: the same device's token, issued no earlier
  (queues are in order).

Ranges are drawn over a small allocation so that partial overlaps, adjacent runs and
merges are the common case.

The same machine runs a second time from a device result whose host memory is committed
lazily (:class:`LazyHostModel`): its host bytes are uncommitted until the host touches them,
and the state's committed grains must be exactly the grains the host touched, cover every
byte the host holds valid, and have been announced to :data:`ON_HOST_COMMIT` once each.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from hostarray._coherence import HOST, ON_HOST_COMMIT, Coherence

N = 48  # bytes in the allocation
DEVICES = ("A", "B")
GARBAGE = -1  # bytes a device buffer holds before anything was published


@st.composite
def spans(draw: Any) -> tuple[int, int]:
    lo = draw(st.integers(0, N - 1))
    return lo, draw(st.integers(lo + 1, N))


class _Owner:
    """What a storage is to its coherence state: the holder of the fast-path flags."""

    __slots__ = ("host_stale", "host_exclusive", "__weakref__")

    def __init__(self) -> None:
        self.host_stale, self.host_exclusive = None, None


class CoherenceModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.owner = _Owner()
        self.c = Coherence(N, self.owner)
        self.fresh = 0
        self.truth = self._new_values(N)
        self.mem: dict[Any, list[int]] = {HOST: list(self.truth)}
        self.token = 0
        self.flights: list[tuple[int, Any, int, int]] = []  # (token, device, lo, hi)
        self.done_upto: dict[Any, int] = {}  # per device: every token <= this is finished
        self.escapes: list[tuple[int, int]] = []

    # -- simulated memory and transfers ----------------------------------------------------
    def _new_values(self, n: int) -> list[int]:
        self.fresh += n
        return list(range(self.fresh - n, self.fresh))

    def _copy(self, src: Any, dst: Any, lo: int, hi: int) -> None:
        self.mem[dst][lo:hi] = self.mem[src][lo:hi]

    def _finished(self, key: Any, upto: int) -> None:
        self.done_upto[key] = max(self.done_upto.get(key, -1), upto)

    def _pending(self) -> list[tuple[int, Any, int, int]]:
        return [f for f in self.flights if f[0] > self.done_upto.get(f[1], -1)]

    def _acquire(self, runs: list[tuple[int, int, Any]]) -> None:
        for lo, hi, key in runs:
            assert key in self.c.devices and key is not HOST
            self._copy(key, HOST, lo, hi)
            self.c.acquired(key, lo, hi)
            self._finished(key, self.token)  # a blocking transfer drains the queue

    def _publish(self, runs: list[tuple[int, int, Any]]) -> None:
        for lo, hi, key in runs:
            self._copy(HOST, key, lo, hi)
            self.c.published(key, lo, hi)

    def _wait(self, tokens: list[Any]) -> None:
        for t in tokens:
            key = next(f[1] for f in self.flights if f[0] == t)
            self._finished(key, t)

    def _launch(self, key: Any, lo: int, hi: int) -> int:
        self.token += 1
        self.flights.append((self.token, key, lo, hi))
        return self.token

    def _check_hazards(self, got: list[Any], lo: int, hi: int, other_than: Any = None) -> None:
        by_key: dict[Any, int] = {}
        for t in got:
            key = next(f[1] for f in self.flights if f[0] == t)
            by_key[key] = max(by_key.get(key, -1), t)
        for t, key, a, b in self._pending():
            if key != other_than and a < hi and lo < b:
                assert by_key.get(key, -1) >= t, f"launch {t} on {key} over [{a},{b}) not waited"

    def _device(self, d: int) -> Any:
        return DEVICES[d]

    def _raw_views_may_have_written(self) -> None:
        if self.c.escaped:
            self.c.raw_views_may_have_written()

    # -- rules -----------------------------------------------------------------------------
    @rule(d=st.integers(0, 1))
    def add_device(self, d: int) -> None:
        key = self._device(d)
        if key not in self.mem:
            self.mem[key] = [GARBAGE] * N
        self.c.add_device(key)

    @rule(span=spans())
    def host_read(self, span: tuple[int, int]) -> None:
        lo, hi = span
        self._acquire(self.c.plan_host_read(lo, hi))
        assert self.mem[HOST][lo:hi] == self.truth[lo:hi], "stale host read"

    @rule(span=spans(), overwrites=st.booleans(), fails_after=st.none() | st.integers(0, N))
    def host_write(self, span: tuple[int, int], overwrites: bool, fails_after: int | None
                   ) -> None:
        lo, hi = span
        hazards = self.c.hazards_for_host_write(lo, hi)
        self._check_hazards(hazards, lo, hi)
        self._wait(hazards)
        self._acquire(self.c.plan_host_write(lo, hi, overwrites))
        skipped = overwrites and not self.c.is_host_current(lo, hi)
        if not overwrites:
            assert self.mem[HOST][lo:hi] == self.truth[lo:hi]
        stop = hi if fails_after is None else min(hi, lo + fails_after)
        values = self._new_values(stop - lo)
        for b, v in zip(range(lo, stop), values):
            if fails_after is None or self.mem[HOST][b] == self.truth[b]:
                self.truth[b] = v  # a failed write is kept where the host was newest
            self.mem[HOST][b] = v
        if fails_after is None:
            self.c.host_written(lo, hi)
        else:
            self.c.host_write_failed(lo, hi, skipped_acquire=skipped)

    @rule(d=st.integers(0, 1), span=spans(), mode=st.sampled_from(["r", "rw", "w"]))
    def launch(self, d: int, span: tuple[int, int], mode: str) -> None:
        key = self._device(d)
        if key not in self.c.devices:
            return
        lo, hi = span
        # the launch path's shortcut: when it says nothing is to do, nothing is
        ready = self.c.device_ready(key, lo, hi, writes=mode != "r")
        before = self.c.validity()
        self._raw_views_may_have_written()
        if ready:
            assert self.c.validity() == before
            assert self.c.plan_device_read(key, lo, hi) == ([], [])
            if mode != "r":
                assert self.c.hazards_for_device_write(key, lo, hi) == []
        if mode != "r":
            hazards = self.c.hazards_for_device_write(key, lo, hi)
            self._check_hazards(hazards, lo, hi, other_than=key)
            self._wait(hazards)
        if mode != "w":
            acquires, publishes = self.c.plan_device_read(key, lo, hi)
            assert all(k == key for _, _, k in publishes)
            self._acquire(acquires)
            self._publish(publishes)
            assert self.mem[key][lo:hi] == self.truth[lo:hi], "the kernel reads stale bytes"
        token = self._launch(key, lo, hi)
        if mode == "r":
            self.c.device_read_launched(key, lo, hi, token)
        else:
            values = self._new_values(hi - lo)
            self.mem[key][lo:hi] = values
            self.truth[lo:hi] = values
            self.c.device_written(key, lo, hi, token)
            if self.c.escaped:  # raw views must see the result (as _storage does)
                self._acquire(self.c.plan_host_read(lo, hi))

    @rule(d=st.integers(0, 1))
    def explicit_acquire(self, d: int) -> None:
        key = self._device(d)
        if key not in self.c.devices:
            return
        self._acquire(self.c.plan_explicit_acquire(key))
        for b in range(N):
            if self.mem[key][b] == self.truth[b]:
                assert self.mem[HOST][b] == self.truth[b], "explicit acquire left a byte"

    @rule(d=st.integers(0, 1))
    def explicit_publish(self, d: int) -> None:
        key = self._device(d)
        if key not in self.c.devices:
            return
        self._raw_views_may_have_written()
        self._acquire(self.c.plan_host_read(0, N))
        self._publish([(0, N, key)])
        assert self.mem[key] == self.truth

    @rule(d=st.integers(0, 1))
    def forget_device(self, d: int) -> None:
        key = self._device(d)
        if key not in self.c.devices:
            return
        runs = self.c.plan_forget(key)
        self._acquire(runs)
        if not runs:
            self._wait(self.c.launches_on(key))
        self.c.forget_device(key)
        self.mem[key] = [GARBAGE] * N  # a new buffer later starts empty

    @rule(d=st.integers(0, 1), span=spans())
    def raw_work_failed(self, d: int, span: tuple[int, int]) -> None:
        """A raw pyopencl block over ``span`` raised: the device copy of it holds nothing
        trusted where the host has the newest bytes (``Storage.discard_raw_use``)."""
        key = self._device(d)
        if key not in self.c.devices:
            return
        lo, hi = span
        self._wait(self.c.launches_on(key))
        for b in range(lo, hi):
            if self.mem[HOST][b] == self.truth[b]:
                self.mem[key][b] = GARBAGE
        self.c.device_invalidated(key, lo, hi)

    @precondition(lambda self: len(self.escapes) < 3)
    @rule(span=spans())
    def escape_begins(self, span: tuple[int, int]) -> None:
        lo, hi = span
        hazards = self.c.hazards_for_host_write(lo, hi)
        self._check_hazards(hazards, lo, hi)
        self._wait(hazards)
        self._acquire(self.c.plan_host_read(lo, hi))
        self.c.escape_begins(lo, hi)
        self.escapes.append(span)

    @precondition(lambda self: self.escapes)
    @rule(j=st.integers(0, 2), k=st.integers(0, N - 1))
    def raw_write(self, j: int, k: int) -> None:
        lo, hi = self.escapes[j % len(self.escapes)]
        b = lo + k % (hi - lo)
        assert self.mem[HOST][b] == self.truth[b], "an escaped byte is not current on the host"
        self.mem[HOST][b] = self.truth[b] = self._new_values(1)[0]  # behind the state's back

    @precondition(lambda self: self.escapes)
    @rule(j=st.integers(0, 2))
    def escape_ends(self, j: int) -> None:
        lo, hi = self.escapes.pop(j % len(self.escapes))
        self.c.escape_ends(lo, hi)

    # -- invariants ------------------------------------------------------------------------
    @invariant()
    def valid_sides_hold_the_newest_bytes(self) -> None:
        segs = self.c.validity()
        assert [s[0] for s in segs][:1] == [0] and segs[-1][1] == N
        for (_, hi, v), (lo2, _, v2) in zip(segs, segs[1:]):
            assert hi == lo2 and v != v2, "segments must tile the allocation, merged"
        # bytes under a live raw view may have been written behind the state's back: the
        # state learns it at the next launch (raw_views_may_have_written), so only the
        # host is checked there
        raw = {b for lo, hi in self.escapes for b in range(lo, hi)}
        for lo, hi, valid in segs:
            assert valid, "no side holds these bytes"
            for side in valid:
                assert side is HOST or side in self.c.devices
                for b in range(lo, hi):
                    if side is HOST or b not in raw:
                        assert self.mem[side][b] == self.truth[b], \
                            f"{side} called valid at byte {b} but stale"

    @invariant()
    def sides_current_is_what_holds_every_byte(self) -> None:
        # the placement rule's question, against the bytes: a side is current for a range
        # when it holds the newest value of each byte (raw views' bytes left out, as above)
        raw = {b for lo, hi in self.escapes for b in range(lo, hi)}
        for lo, hi in ((0, N), (0, 1), (N // 3, N // 2), (N - 5, N)):
            held = {side for side in (HOST, *self.c.devices)
                    if all(self.mem[side][b] == self.truth[b] for b in range(lo, hi)
                           if side is HOST or b not in raw)}
            assert self.c.sides_current(lo, hi) <= held
            assert self.c.sides_current(lo, hi) == frozenset(
                side for side in (HOST, *self.c.devices) if
                (side is HOST and self.c.is_host_current(lo, hi))
                or (side is not HOST and self.c.is_current(side, lo, hi)))

    @invariant()
    def flags_match_the_map(self) -> None:
        stale = any(HOST not in v for _, _, v in self.c.validity())
        assert self.c.host_stale == stale
        if self.c.host_exclusive:
            assert not stale and not self.c.inflight
            assert all(v == {HOST} for _, _, v in self.c.validity())
        # the owner's flags follow every change, whichever method made it
        assert (self.owner.host_stale, self.owner.host_exclusive) == (
            self.c.host_stale, self.c.host_exclusive)


TestCoherenceModel = pytest.mark.slow(CoherenceModel.TestCase)
TestCoherenceModel.settings = settings(max_examples=600, stateful_step_count=50, deadline=None,
                                       suppress_health_check=list(HealthCheck))

GRAIN = 8  # the lazy model's commit grain (bytes; N is 6 grains)
UNCOMMITTED = -2  # a host byte whose memory the host never touched


class LazyHostModel(CoherenceModel):
    """:class:`CoherenceModel` from a device result on ``A`` whose host memory is not
    committed (``Coherence.device_result(..., commit_grain=GRAIN)``, a storage over
    ``lazy_empty`` memory): the host memory is touched only by acquires into it and host
    writes (a raw view's writes too), and committed in whole grains."""

    def __init__(self) -> None:
        super().__init__()
        self.commits: list[int] = []
        ON_HOST_COMMIT.append(self.commits.append)
        self.c = Coherence.device_result(N, "A", self.owner, commit_grain=GRAIN)
        self.mem = {HOST: [UNCOMMITTED] * N, "A": list(self.truth)}
        self.touched: set[int] = set()

    def teardown(self) -> None:
        ON_HOST_COMMIT.remove(self.commits.append)

    def _acquire(self, runs: list[tuple[int, int, Any]]) -> None:
        for lo, hi, _ in runs:
            self.touched.update(range(lo, hi))
        super()._acquire(runs)

    @rule(span=spans(), overwrites=st.booleans(), fails_after=st.none() | st.integers(0, N))
    def host_write(self, span: tuple[int, int], overwrites: bool, fails_after: int | None
                   ) -> None:
        super().host_write(span, overwrites, fails_after)
        self.touched.update(range(*span))  # (a failed write may have written any of it)

    @precondition(lambda self: len(self.escapes) < 3)
    @rule(span=spans())
    def escape_begins(self, span: tuple[int, int]) -> None:
        super().escape_begins(span)
        self.touched.update(range(*span))

    @invariant()
    def committed_is_what_the_host_touched(self) -> None:
        ranges = self.c.committed_ranges()
        grains = {b // GRAIN for lo, hi in ranges for b in range(lo, hi)}
        assert grains == {b // GRAIN for b in self.touched}, "committed != touched grains"
        for (_, hi), (lo2, _) in zip(ranges, ranges[1:]):
            assert hi < lo2, "committed ranges must be disjoint, sorted and merged"
        assert all(lo % GRAIN == 0 and (hi % GRAIN == 0 or hi == N) for lo, hi in ranges)
        committed = {b for lo, hi in ranges for b in range(lo, hi)}
        for lo, hi, valid in self.c.validity():
            if HOST in valid:
                assert set(range(lo, hi)) <= committed, "the host holds uncommitted bytes"
        for b in range(N):
            if b not in self.touched:
                assert self.mem[HOST][b] == UNCOMMITTED  # (the model itself never wrote it)
        # each grain announced once, when first touched
        assert sum(self.commits) == self.c.committed_bytes == len(committed)


TestLazyHostModel = LazyHostModel.TestCase
TestLazyHostModel.settings = settings(max_examples=300, stateful_step_count=50, deadline=None,
                                      suppress_health_check=list(HealthCheck))


def test_a_lazy_device_result_commits_nothing_until_the_host_touches_it() -> None:
    seen: list[int] = []
    ON_HOST_COMMIT.append(seen.append)
    try:
        c = Coherence.device_result(64, "d", commit_grain=16)
        assert c.committed_ranges() == [] and c.committed_bytes == 0
        assert c.plan_host_read(0, 64) == [(0, 64, "d")]  # nothing, and the host lacks it all
        c.acquired("d", 20, 24)  # one element read: its grain only
        assert c.committed_ranges() == [(16, 32)] and seen == [16]
        c.acquired("d", 16, 32)  # the same grain again: nothing new
        assert seen == [16]
        c.host_written(40, 41)
        c.host_touched(30, 50)  # spans a committed grain and a new one
        assert c.committed_ranges() == [(16, 64)] and seen == [16, 16, 16]
        c.host_touched(0, 1)
        assert c.committed_ranges() == [(0, 64)] and c.commit_grain == 0  # all: tracking ends
        assert sum(seen) == 64
        # every other state's host memory is committed, and announces nothing
        plain = Coherence(64)
        plain.add_device("d")
        plain.host_written(0, 64)
        assert plain.committed_ranges() == [(0, 64)] and sum(seen) == 64
        assert Coherence.device_result(64, "d").committed_ranges() == [(0, 64)]
        assert Coherence.device_result(0, "d", commit_grain=16).committed_ranges() == []
    finally:
        ON_HOST_COMMIT.remove(seen.append)
    with pytest.raises(ValueError, match="commit_grain"):
        Coherence.device_result(64, "d", commit_grain=-1)


def test_the_owner_flags_close_the_fast_paths_while_failures_wait() -> None:
    owner = _Owner()
    c = Coherence(16, owner)
    assert (owner.host_stale, owner.host_exclusive) == (False, True)  # set at creation
    c.report_later(["failed-1", "failed-2"])
    assert (owner.host_stale, owner.host_exclusive) == (True, False)
    assert (c.host_stale, c.host_exclusive) == (False, True)  # the map's own: unchanged
    c.add_device("d")
    assert (owner.host_stale, owner.host_exclusive) == (True, False)
    assert c.take_unreported() == ["failed-1", "failed-2"] and c.unreported == []
    assert (owner.host_stale, owner.host_exclusive) == (False, True)
    c.report_later([])  # nothing to report: nothing closes
    assert (owner.host_stale, owner.host_exclusive) == (False, True)
    c.device_read_launched("d", 0, 16, token="t")
    assert (owner.host_stale, owner.host_exclusive) == (False, False)
    c.device_written("d", 0, 8, token="u")
    assert (owner.host_stale, owner.host_exclusive) == (True, False)
    r_owner = _Owner()
    r = Coherence.device_result(16, "d", r_owner)
    assert (r.host_stale, r.host_exclusive) == (True, False)
    assert (r_owner.host_stale, r_owner.host_exclusive) == (True, False)


def test_the_owner_is_held_weakly() -> None:
    import gc
    import weakref

    owner = _Owner()
    c = Coherence(16, owner)
    gone = weakref.ref(owner)
    del owner
    assert gone() is None  # no cycle through the state: a storage goes when its arrays do
    gc.collect()
    c.add_device("d")
    c.device_written("d", 0, 16, token="t")  # an owner gone is no error
    assert c.host_stale


def test_only_the_coherence_state_sets_the_fast_path_flags() -> None:
    # no hand-kept mirror: outside _coherence.py, host_stale and host_exclusive are
    # assigned only where a storage starts (before it has a state)
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "hostarray"
    found = []
    for path in root.rglob("*.py"):
        if path.name == "_coherence.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                targets = (node.targets if isinstance(node, ast.Assign)
                           else [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign)
                           else [])
                for t in targets:
                    for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                        if isinstance(e, ast.Attribute) and e.attr in ("host_stale",
                                                                       "host_exclusive"):
                            found.append(f"{path.relative_to(root)}:{node.lineno} {fn.name}")
    assert found and all(f.startswith("_storage.py:") and f.endswith(" __init__")
                         for f in found), found


def test_one_transfer_per_contiguous_run() -> None:
    c = Coherence(1 << 30)
    c.add_device("d")
    assert c.plan_device_read("d", 0, 1 << 30) == ([], [(0, 1 << 30, "d")])
    c.published("d", 0, 1 << 30)
    for k in range(4):  # four kernels on adjacent quarters: one run to read back
        c.device_written("d", k << 28, (k + 1) << 28, token=k)
    assert c.plan_host_read(0, 1 << 30) == [(0, 1 << 30, "d")]
    assert len(c.validity()) == 1


def test_a_host_read_of_one_element_plans_only_its_bytes() -> None:
    c = Coherence(4096)
    c.add_device("d")
    c.device_written("d", 0, 4096, token="k")
    assert c.plan_host_read(20, 24) == [(20, 24, "d")]
    c.acquired("d", 20, 24)
    assert c.plan_host_read(0, 4096) == [(0, 20, "d"), (24, 4096, "d")]
    assert c.plan_host_read(20, 24) == []


def test_module_imports_neither_numpy_nor_opencl() -> None:
    code = ("import sys, importlib.util as u; s = u.spec_from_file_location('c', "
            "'hostarray/_coherence.py'); m = u.module_from_spec(s); s.loader.exec_module(m); "
            "print(sorted(k for k in sys.modules if k.startswith(('pyopencl', 'numpy'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=__file__.rsplit("/tests/", 1)[0])
    assert out.stdout.strip() == "[]"


def test_a_failed_whole_overwrite_keeps_what_the_host_held() -> None:
    """``x[...] = v`` raising half-way over [0, 8), where the host held [0, 4) (and so did
    the device) and only the device held [4, 8): the host's partial write is the newest
    in [0, 4); the device keeps [4, 8)."""
    c = Coherence(8)
    c.add_device("d")
    c.published("d", 0, 8)
    c.device_written("d", 4, 8, token="k")
    c.host_write_failed(0, 8, skipped_acquire=True)
    assert c.validity() == [(0, 4, {HOST}), (4, 8, {"d"})]


def test_compacted_launches_keep_every_range() -> None:
    """Read launches pile up (never waited for); compaction keeps the newest token per
    device over the union of their ranges, so a host write over the *oldest* range still
    waits."""
    c = Coherence(4096)
    c.add_device("d")
    c.published("d", 0, 4096)
    for k in range(12):
        c.device_read_launched("d", 256 * k, 256 * k + 16, token=k)
    assert len(c.inflight) < 12
    # the ninth entry compacted launches 0..8 into token 8 over [0, 2064)
    assert c.hazards_for_host_write(0, 16) == [8]
    assert c.hazards_for_device_write("e", 0, 16) == [8]
    assert c.hazards_for_host_write(256 * 11, 256 * 11 + 1) == [11]
    assert c.hazards_for_device_write("d", 0, 16) == []


def test_device_ready_says_when_a_launch_has_nothing_to_do() -> None:
    c = Coherence(4096)
    c.add_device("d")
    c.add_device("e")
    assert not c.device_ready("d", 0, 4096)  # nothing published yet
    c.published("d", 0, 4096)
    assert c.device_ready("d", 0, 4096, writes=True) and c.device_ready("d", 8, 16)
    assert not c.device_ready("d", 0, 4097) and not c.device_ready("d", 16, 16)
    c.device_written("d", 0, 4096, token="k1")
    assert c.host_stale and not c.host_exclusive
    c.device_written("d", 0, 4096, token="k2")  # the map unchanged: the shortcut
    assert c.validity() == [(0, 4096, {"d"})] and c.host_stale and not c.host_exclusive
    assert c.hazards_for_host_write(0, 4) == ["k1", "k2"]
    assert c.device_ready("d", 0, 4096, writes=True)
    assert not c.device_ready("e", 0, 4096)  # e lacks the newest bytes
    c.acquired("d", 0, 2048)  # two segments now: the general path answers
    assert not c.device_ready("d", 0, 4096) and c.device_ready("d", 0, 2048)
    c.published("e", 0, 2048)
    c.device_read_launched("e", 0, 2048, token="r")
    assert c.device_ready("d", 0, 2048) and not c.device_ready("d", 0, 2048, writes=True)
    assert c.device_ready("d", 2048, 4096, writes=True)  # e's read is elsewhere
    c.escape_begins(0, 16)
    assert not c.device_ready("d", 2048, 4096)  # a raw view may write: ask the planner


def test_device_write_ready_agrees_with_the_hazards() -> None:
    c = Coherence(4096)
    c.add_device("d")
    c.add_device("e")
    assert c.device_write_ready("d", 0, 4096)  # nothing in flight anywhere
    c.published("e", 0, 2048)
    c.device_read_launched("e", 0, 2048, token="r")
    for lo, hi in [(0, 4096), (0, 1), (2047, 2048), (2048, 4096), (100, 200)]:
        ready = c.device_write_ready("d", lo, hi)
        assert ready == (c.hazards_for_device_write("d", lo, hi) == []), (lo, hi)
    assert c.device_write_ready("e", 0, 4096)  # e's own queue is in order
    c.escape_begins(3000, 3100)
    assert not c.device_write_ready("d", 2048, 4096)  # a raw view may write: ask


@pytest.mark.parametrize("size", [0, 1, 4096])
def test_a_device_result_is_a_full_device_write_without_its_token(size: int) -> None:
    fresh = Coherence.device_result(size, "d")
    written = Coherence(size)
    written.add_device("d")
    written.device_written("d", 0, size, token="k")
    assert fresh.validity() == written.validity()
    assert fresh.host_stale == written.host_stale
    assert fresh.plan_host_read(0, size) == written.plan_host_read(0, size)
    assert fresh.plan_device_read("d", 0, size) == ([], [])
    assert fresh.inflight == [] and list(fresh.devices) == ["d"]
    if size:
        assert not fresh.host_exclusive


def test_an_open_raw_block_stands_in_the_way_of_writes_elsewhere_only() -> None:
    c = Coherence(64)
    c.add_device("a")
    c.add_device("b")
    assert c.raw_block_in_the_way(HOST, 0, 64) is None
    c.raw_block_opens("b", 16, 32)
    assert c.raw_block_in_the_way(HOST, 0, 17) == ("b", 16, 32)  # overlapping: refused
    assert c.raw_block_in_the_way("a", 31, 40) == ("b", 16, 32)
    assert c.raw_block_in_the_way(HOST, 0, 16) is None  # adjacent: free
    assert c.raw_block_in_the_way(HOST, 32, 64) is None
    assert c.raw_block_in_the_way("b", 0, 64) is None  # the block's own device: its queue orders
    c.raw_block_opens("b", 16, 32)  # the same range twice (two blocks): ends one at a time
    c.raw_block_ends("b", 16, 32)
    assert c.raw_block_in_the_way(HOST, 20, 21) == ("b", 16, 32)
    c.raw_block_ends("b", 16, 32)
    assert c.raw_block_in_the_way(HOST, 0, 64) is None


def test_a_read_on_the_blocks_own_device_publishes_nothing_over_its_bytes() -> None:
    # the raw code writes the block's bytes on its device: a publish (or an acquire) there
    # for a launch or a nested block on that device would overwrite them (a lost write)
    c = Coherence(64)
    c.add_device("a")
    c.add_device("b")
    c.device_written("a", 48, 64, None)  # a holds the newest of [48, 64)
    c.acquired("a", 48, 64)
    c.device_written("a", 56, 64, None)
    c.raw_block_opens("b", 16, 32)
    assert c.plan_device_read("b", 0, 64) == ([(56, 64, "a")], [(0, 16, "b"), (32, 64, "b")])
    assert c.plan_device_read("b", 16, 32) == ([], [])
    assert c.plan_device_read("b", 20, 40) == ([], [(32, 40, "b")])
    # another device reads the bytes as they were: the host's are published there
    assert c.plan_device_read("a", 16, 32) == ([], [(16, 32, "a")])
    c.raw_block_opens("b", 0, 8)
    assert c.plan_device_read("b", 0, 40) == ([], [(8, 16, "b"), (32, 40, "b")])
    c.raw_block_ends("b", 0, 8)
    c.raw_block_ends("b", 16, 32)
    assert c.plan_device_read("b", 16, 32) == ([], [(16, 32, "b")])


def test_a_block_whose_buffer_went_stands_in_the_way_of_its_own_device_too() -> None:
    c = Coherence(64)
    c.add_device("b")
    c.raw_block_opens("b", 16, 32)
    assert c.raw_block_in_the_way("b", 0, 64) is None
    assert c.raw_block_in_the_way(HOST, 0, 64, writes=False) is None
    c.forget_device("b")  # free_buffer while the block runs
    c.add_device("b")  # a new buffer: it lacks the raw code's bytes
    assert c.raw_block_in_the_way("b", 20, 24, writes=False) == ("b", 16, 32)
    assert c.raw_block_in_the_way("b", 32, 64) is None
    assert c.plan_device_read("b", 0, 64) == ([], [(0, 64, "b")])
    assert c.raw_block_in_the_way(HOST, 0, 64, writes=False) is None  # reads elsewhere: free
    c.raw_block_ends("b", 16, 32, detached=True)
    assert c.raw_block_in_the_way("b", 0, 64, writes=False) is None
    assert not c.raw_blocks and not c.raw_detached
