"""Kernels on views of one array: the sub-buffers hostarray passes never overlap (issue 11).

OpenCL leaves overlapping sub-buffers in use undefined (and a buffer with one of its
sub-buffers, unless both are only read); NVIDIA's driver crashed on many of them.  The rule
(``OpenCLBuffer.handle``): a view that is not the whole array is passed as a sub-buffer
from its origin over whole alignment units (clipped to the buffer's end); views with the
same units share one; creating one that overlaps a live one first retires the old one once
its last command is done.  A launch that would need two different overlapping sub-buffers
of one array is refused (``BadLaunch``) before anything is published.

A hypothesis state machine launches kernels on random views at aligned offsets, compares
every value with a numpy model, and after each launch inspects the buffers: no two live
sub-buffers overlap, each covers whole units from its view's origin, and a launch never
passed the whole buffer with an overlapping sub-buffer unless both were only read.  Run it
on both links: ``python3 -m pytest tests/coherence/test_view_subbuffers.py`` and again with
``HOSTARRAY_LINK=copied``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import hostarray as ha
from hostarray import hostptr
from hostarray.backends.opencl import OpenCLBuffer

pytestmark = pytest.mark.device

SRC = r"""
__kernel void add(__global float *x, const float v, const int spin) {
    int i = get_global_id(0);
    float acc = 1.0f;
    for (int k = 0; k < spin; ++k) acc = acc * 1.0000001f;
    x[i] += v + (acc > 1e30f ? 1.0f : 0.0f);
}
__kernel void copy(__global const float *src, __global float *dst) {
    dst[get_global_id(0)] = src[get_global_id(0)];
}
__kernel void sum2(__global const float *a, __global const float *b, __global float *out) {
    int i = get_global_id(0); out[i] = a[i] + b[i];
}
"""

READ, WRITE = False, True
K = 2  # arrays


@pytest.fixture()
def handles(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, int, int, Any]]:
    """Every ``OpenCLBuffer.handle`` call, as ``(buffer, offset, nbytes, handle)``."""
    calls: list[tuple[Any, int, int, Any]] = []
    original = OpenCLBuffer.handle

    def spy(self: OpenCLBuffer, offset: int, nbytes: int) -> Any:
        h = original(self, offset, nbytes)
        calls.append((self, offset, nbytes, h))
        return h

    monkeypatch.setattr(OpenCLBuffer, "handle", spy)
    return calls


def units(lo: int, nbytes: int, unit: int, total: int) -> tuple[int, int]:
    """The byte range a view's sub-buffer must cover (the rule, written out again here)."""
    return lo, min(total, lo + ((nbytes + unit - 1) // unit) * unit)


def check_live(buf: OpenCLBuffer) -> None:
    """The invariant: live sub-buffers cover whole units from an aligned origin and no two
    of them overlap."""
    ranges = buf.sub_ranges()
    assert ranges == sorted(buf.subs), "sub_ranges() differs from the live sub-buffers"
    for lo, hi in ranges:
        assert lo % buf.unit == 0 and 0 < hi <= buf.nbytes, (lo, hi, buf.unit)
        assert (hi - lo) % buf.unit == 0 or hi == buf.nbytes, f"{(lo, hi)}: not whole units"
        sub = buf.subs[(lo, hi)]
        assert (sub.offset, sub.size) == (lo, hi - lo)
    for (_, hi), (lo, _) in zip(ranges, ranges[1:]):
        assert hi <= lo, f"live sub-buffers overlap: {ranges}"


def check_launch(calls: list[tuple[Any, int, int, Any]], writes: list[bool]) -> None:
    """What one launch passed: the whole buffer only for a whole view, a sub-buffer of the
    rule's range otherwise, still live after the launch; two handles of one buffer either the
    same object or non-overlapping sub-buffers, or the whole buffer and a sub-buffer both
    only read."""
    assert len(calls) == len(writes), (calls, writes)
    for buf, off, nbytes, h in calls:
        if off == 0 and nbytes == buf.nbytes:
            assert h is buf.buf, "a whole view was not passed as the buffer itself"
        else:
            assert h is not buf.buf, f"a view of {nbytes} bytes at {off} got the whole buffer"
            want = units(off, nbytes, buf.unit, buf.nbytes)
            assert (h.offset, h.offset + h.size) == want
            assert buf.subs.get(want) is h, "a sub-buffer was retired within its own launch"
        check_live(buf)
    for i, (b1, _, _, h1) in enumerate(calls):
        for j in range(i):
            b2, _, _, h2 = calls[j]
            if b1 is not b2 or h1 is h2:
                continue
            if h1 is b1.buf or h2 is b2.buf:
                assert not (writes[i] or writes[j]), \
                    "the whole buffer and a sub-buffer in one launch with one written"
            else:
                r1 = (h1.offset, h1.offset + h1.size)
                r2 = (h2.offset, h2.offset + h2.size)
                assert r1[1] <= r2[0] or r2[1] <= r1[0], \
                    f"two overlapping sub-buffers in one launch: {r1} {r2}"


values = st.integers(-20, 20).map(float)
which = st.integers(0, K - 1)


class ViewMachine(RuleBasedStateMachine):
    """Arrays ``xs[i]`` on the device vs numpy ``model[i]``; views at aligned offsets."""

    device: Any = None
    calls: list[tuple[Any, int, int, Any]] = []
    steps = 0
    launched = 0
    refused = 0
    retired = 0

    @initialize(seed=st.integers(0, 2**16), extra=st.integers(1, 3))
    def setup(self, seed: int, extra: int) -> None:
        dev = self.device
        self.prg = ha.Program(SRC, device=dev)
        self.g = dev.alignment // 4  # float32 elements per alignment unit
        # not a whole number of units: the last sub-buffer is clipped to the buffer's end
        self.n = 10 * self.g + extra * self.g // 4 + 1
        rng = np.random.default_rng(seed)
        self.model = [rng.integers(-9, 9, self.n).astype(np.float32) for _ in range(K)]
        self.xs = [ha.asarray(m, device=dev, copy=True) for m in self.model]
        self.launches: list[Any] = []

    # -- helpers ---------------------------------------------------------------------------
    def _span(self, data: st.DataObject, whole_ok: bool = True) -> tuple[int, int]:
        if whole_ok and data.draw(st.integers(0, 5)) == 0:
            return 0, self.n
        start = data.draw(st.integers(0, (self.n - 1) // self.g)) * self.g
        return start, data.draw(st.integers(1, self.n - start))

    def _buf(self, i: int) -> OpenCLBuffer:
        return self.xs[i]._s.buffers[self.device]

    def _live(self) -> list[list[tuple[int, int]]]:
        return [self._buf(i).sub_ranges() if self.device in self.xs[i]._s.buffers else []
                for i in range(K)]

    def _launch(self, kernel: Any, size: int, args: list[Any], writes: list[bool]) -> None:
        before = self._live()
        self.calls.clear()
        self.launches.append(kernel(size, *args))
        del self.launches[:-3]
        check_launch(self.calls, writes)
        type(self).launched += 1
        after = self._live()
        if any(set(b) - set(a) for a, b in zip(after, before)):
            type(self).retired += 1

    def _refused(self, kernel: Any, size: int, args: list[Any], match: str) -> None:
        before, live = ha.stats(), self._live()
        self.calls.clear()
        with pytest.raises(hostptr.BadLaunch, match=match):
            kernel(size, *args)
        assert ha.stats() == before, "a refused launch synchronised something"
        assert self._live() == live, "a refused launch changed the sub-buffers"
        assert not self.calls, "a refused launch asked for a handle"
        type(self).refused += 1

    # -- launches ----------------------------------------------------------------------------
    @rule(i=which, data=st.data(), v=values, spin=st.sampled_from([0, 0, 0, 3000]))
    def add(self, i: int, data: st.DataObject, v: float, spin: int) -> None:
        s, n = self._span(data)
        self._launch(self.prg.add, n, [self.xs[i][s:s + n], v, spin], [WRITE])
        self.model[i][s:s + n] += np.float32(v)

    @rule(i=which, j=which, data=st.data())
    def copy(self, i: int, j: int, data: st.DataObject) -> None:
        s1, n1 = self._span(data)
        s2, n2 = self._span(data)
        n = min(n1, n2)
        args = [self.xs[i][s1:s1 + n1], self.xs[j][s2:s2 + n2]]
        if i == j and (s1, n1) != (s2, n2) and s1 < s2 + n2 and s2 < s1 + n1:
            self._refused(self.prg.copy, n, args, "overlaps another argument")
            return
        if i == j and s1 == s2:
            return  # src and dst the same part: the kernel copies each element onto itself
        self._launch(self.prg.copy, n, args, [READ, WRITE])
        self.model[j][s2:s2 + n] = self.model[i][s1:s1 + n]

    @rule(i=which, data=st.data())
    def sum2(self, i: int, data: st.DataObject) -> None:
        """Two read-only parts of one array, written into the other array."""
        j = 1 - i
        s1, n1 = self._span(data)
        s2, n2 = self._span(data)
        so = data.draw(st.integers(0, (self.n - 1) // self.g)) * self.g
        n = min(n1, n2, self.n - so)
        x, model = self.xs[i], self.model[i]
        args = [x[s1:s1 + n1], x[s2:s2 + n2], self.xs[j][so:so + n]]
        total, unit = self.n * 4, self.g * 4
        r1, r2 = (s1 * 4, (s1 + n1) * 4), (s2 * 4, (s2 + n2) * 4)
        overlap = r1 != r2 and r1[0] < r2[1] and r2[0] < r1[1]
        whole = (0, total) in (r1, r2)
        if overlap and not whole and units(r1[0], r1[1] - r1[0], unit, total) != \
                units(r2[0], r2[1] - r2[0], unit, total):
            self._refused(self.prg.sum2, n, args, "pass the whole array once with an offset")
            return
        self._launch(self.prg.sum2, n, args, [READ, READ, WRITE])
        self.model[j][so:so + n] = model[s1:s1 + n] + model[s2:s2 + n]

    @precondition(lambda self: self.launches)
    @rule(k=st.integers(0, 2))
    def wait(self, k: int) -> None:
        self.launches[k % len(self.launches)].wait()

    # -- host side -------------------------------------------------------------------------------
    @rule(i=which, data=st.data(), v=values)
    def host_write(self, i: int, data: st.DataObject, v: float) -> None:
        start = data.draw(st.integers(0, self.n - 1))
        stop = data.draw(st.integers(start + 1, self.n))
        self.xs[i][start:stop] = v
        self.model[i][start:stop] = v

    @rule(i=which, data=st.data())
    def host_read(self, i: int, data: st.DataObject) -> None:
        start = data.draw(st.integers(0, self.n - 1))
        got = np.array(self.xs[i][start:], copy=True)
        want = self.model[i][start:]
        assert np.array_equal(got, want), \
            f"array {i} differs at {np.flatnonzero(got != want)[:8] + start}"

    @rule(i=which)
    def free_buffer(self, i: int) -> None:
        hostptr.free_buffer(self.xs[i], self.device)

    # -- invariants ------------------------------------------------------------------------------
    @invariant()
    def sub_buffers_never_overlap(self) -> None:
        type(self).steps += 1
        for i in range(K):
            if self.device in self.xs[i]._s.buffers:
                check_live(self._buf(i))

    def teardown(self) -> None:
        for i in range(K):
            np.testing.assert_array_equal(np.array(self.xs[i], copy=True), self.model[i])
        self.launches.clear()


def test_views_state_machine(cl_device: ha.Device, thorough: bool,
                             handles: list[tuple[Any, int, int, Any]]) -> None:
    ViewMachine.device = cl_device
    ViewMachine.calls = handles
    ViewMachine.steps = ViewMachine.launched = ViewMachine.refused = ViewMachine.retired = 0
    examples, steps = (300, 50) if thorough else (25, 30)
    run_state_machine_as_test(ViewMachine, settings=settings(
        max_examples=examples, stateful_step_count=steps, deadline=None,
        derandomize=not thorough, suppress_health_check=list(HealthCheck)))
    m = ViewMachine
    print(f"\nviews: {m.steps} steps, {m.launched} launches ({m.retired} retired a "
          f"sub-buffer), {m.refused} refused, on {cl_device} (link {cl_device.link})")
    assert m.launched >= 50 and m.refused >= 1 and m.retired >= 1


# -- the rule, case by case -----------------------------------------------------------------------

@pytest.fixture()
def prg(cl_device: ha.Device) -> Any:
    return ha.Program(SRC, device=cl_device)


def _array(dev: ha.Device, units_: float) -> ha.HostPtrArray:
    n = int(units_ * dev.alignment // 4)
    return ha.asarray(np.arange(n, dtype=np.float32), device=dev, copy=True)


def test_only_the_whole_view_gets_the_buffer_itself(cl_device, prg, handles) -> None:
    g = cl_device.alignment // 4
    x = _array(cl_device, 8)
    prg.add(8 * g, x, 1.0, 0)
    prg.add(g // 2, x[:g // 2], 1.0, 0)  # a short view at offset 0: a sub-buffer
    buf = x._s.buffers[cl_device]
    assert handles[0][3] is buf.buf and handles[1][3] is not buf.buf
    assert buf.sub_ranges() == [(0, cl_device.alignment)]
    want = np.arange(8 * g, dtype=np.float32) + 1
    want[:g // 2] += 1
    np.testing.assert_array_equal(np.array(x, copy=True), want)


def test_sub_buffers_cover_whole_units_clipped_to_the_end(cl_device, prg, handles) -> None:
    u = cl_device.alignment
    x = _array(cl_device, 4.5)  # 4 units and a half
    buf = x._s.buffers.get(cl_device)
    prg.add(3, x[u // 4:u // 4 + 3], 1.0, 0)  # 12 bytes at unit 1: one whole unit
    prg.add(u // 4 + 1, x[3 * u // 4:], 1.0, 0)  # from unit 3 to the end: clipped
    buf = x._s.buffers[cl_device]
    assert buf.sub_ranges() == [(u, 2 * u), (3 * u, 4 * u + u // 2)]
    check_live(buf)


def test_views_with_the_same_units_share_one_sub_buffer(cl_device, prg, handles) -> None:
    g = cl_device.alignment // 4
    if g < 4:
        pytest.skip("the alignment unit holds fewer than 4 floats")
    x, out = _array(cl_device, 4), _array(cl_device, 1)
    prg.sum2(g // 4, x[g:g + g // 4], x[g:g + g // 2], out[:g // 4])  # both read: fine
    assert handles[0][3] is handles[1][3]
    assert x._s.buffers[cl_device].sub_ranges() == [(cl_device.alignment,
                                                      2 * cl_device.alignment)]
    prg.add(g // 2, x[g:g + g // 2], 1.0, 0)  # the same units again: no new sub-buffer
    assert handles[3][3] is handles[0][3]
    base = np.arange(4 * g, dtype=np.float32)
    np.testing.assert_array_equal(np.array(out[:g // 4], copy=True),
                                  2 * base[g:g + g // 4])


def test_an_overlapping_view_retires_the_old_sub_buffer_after_its_launch(
        cl_device, prg, handles) -> None:
    g = cl_device.alignment // 4
    x = _array(cl_device, 8)
    first = prg.add(2 * g, x[g:3 * g], 1.0, 200_000)  # runs a while
    old = handles[-1][3]
    before = ha.stats()
    prg.add(2 * g, x[2 * g:4 * g], 1.0, 0)  # overlaps the first view: retires its sub
    assert first.done, "the old sub-buffer was retired while its launch could still run"
    buf = x._s.buffers[cl_device]
    assert all(s is not old for s in buf.subs.values())  # identity: a released handle may
    # compare equal to a new one (pyopencl compares the driver pointers)
    assert buf.sub_ranges() == [(2 * cl_device.alignment, 4 * cl_device.alignment)]
    assert ha.stats().waits - before.waits <= 1
    want = np.arange(8 * g, dtype=np.float32)
    want[g:3 * g] += 1
    want[2 * g:4 * g] += 1
    np.testing.assert_array_equal(np.array(x, copy=True), want)


def test_disjoint_views_keep_their_sub_buffers_and_never_wait(cl_device, prg, handles) -> None:
    g = cl_device.alignment // 4
    x = _array(cl_device, 8)
    prg.add(2 * g, x[:2 * g], 1.0, 0)
    ha.reset_stats()
    for _ in range(3):
        for k in range(4):  # four views that tile the array: four live sub-buffers
            prg.add(g + 1 if k < 3 else 2 * g, x[2 * k * g:2 * k * g + (g + 1 if k < 3
                                                                           else 2 * g)],
                    1.0, 2000)
    assert ha.stats().waits == 0, "views that do not overlap waited"
    buf = x._s.buffers[cl_device]
    u = cl_device.alignment
    assert buf.sub_ranges() == [(0, 2 * u), (2 * u, 4 * u), (4 * u, 6 * u), (6 * u, 8 * u)]


def test_two_overlapping_read_only_parts_are_refused_and_change_nothing(
        cl_device, prg, handles) -> None:
    g = cl_device.alignment // 4
    x, out = _array(cl_device, 8), _array(cl_device, 8)
    prg.add(2 * g, x[g:3 * g], 1.0, 0)  # a live sub-buffer, device-newest data
    x_host = ha.asarray(np.zeros(8 * g, np.float32), device=cl_device)
    x_host[:] = 5.0  # host-newest: a launch would publish it
    live = x._s.buffers[cl_device].sub_ranges()
    before = ha.stats()
    handles.clear()
    with pytest.raises(hostptr.BadLaunch,
                       match="overlapping parts of the same array.*whole array once with an "
                             "offset argument, or a copy") as e:
        prg.sum2(2 * g, x[g:3 * g], x[2 * g:4 * g], out[:2 * g])
    assert e.value.argument == "b"
    with pytest.raises(hostptr.BadLaunch, match="overlapping parts"):
        prg.sum2(2 * g, x_host[:3 * g], x_host[2 * g:4 * g], out[:2 * g])
    assert ha.stats() == before, "a refused launch synchronised something"
    assert not handles and x._s.buffers[cl_device].sub_ranges() == live
    want = np.arange(8 * g, dtype=np.float32)
    want[g:3 * g] += 1
    np.testing.assert_array_equal(np.array(x, copy=True), want)
    np.testing.assert_array_equal(np.array(out, copy=True), np.arange(8 * g, dtype=np.float32))
    np.testing.assert_array_equal(np.array(x_host, copy=True), np.full(8 * g, 5.0, np.float32))


def test_the_whole_array_and_a_part_both_read_are_allowed(cl_device, prg, handles) -> None:
    g = cl_device.alignment // 4
    x, out = _array(cl_device, 8), _array(cl_device, 8)
    prg.sum2(6 * g, x, x[2 * g:], out[:6 * g])
    buf = x._s.buffers[cl_device]
    assert handles[0][3] is buf.buf and handles[1][3] is not buf.buf
    base = np.arange(8 * g, dtype=np.float32)
    np.testing.assert_array_equal(np.array(out[:6 * g], copy=True), base[:6 * g] + base[2 * g:])
    with pytest.raises(hostptr.BadLaunch, match="overlaps another argument"):
        prg.copy(6 * g, x, x[2 * g:])  # the whole array read, a part written: refused


def test_cl_buffer_of_a_short_view_at_zero_is_a_sub_buffer(cl_device) -> None:
    g = cl_device.alignment // 4
    x = _array(cl_device, 4)
    with hostptr.cl_buffer(x[:g], cl_device, "r") as b:
        assert b.size == cl_device.alignment and b.offset == 0
    with hostptr.cl_buffer(x, cl_device, "r") as b:
        assert b is x._s.buffers[cl_device].buf


def test_free_buffer_drops_the_sub_buffers(cl_device, prg) -> None:
    g = cl_device.alignment // 4
    x = _array(cl_device, 4)
    prg.add(g, x[g:2 * g], 1.0, 0)
    buf = x._s.buffers[cl_device]
    assert buf.sub_ranges()
    hostptr.free_buffer(x, cl_device)
    assert buf.sub_ranges() == [] and not buf.subs
    want = np.arange(4 * g, dtype=np.float32)
    want[g:2 * g] += 1
    np.testing.assert_array_equal(np.array(x, copy=True), want)
