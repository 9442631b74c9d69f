"""Hypothesis state machine: host reads/writes (arrays, views, raw numpy
exports), launches (read, write, read-write), explicit publish/acquire and
free, every observed value compared with a plain-numpy model."""

from __future__ import annotations

import gc

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

pytestmark = pytest.mark.device

N = 256  # float32 elements; N/2 * 4 bytes is a multiple of every device alignment seen
SRC = r"""
__kernel void add(__global float *x, const float a) { x[get_global_id(0)] += a; }
__kernel void fill(__global float *x, const float a) { x[get_global_id(0)] = a; }
__kernel void copy(__global const float *src, __global float *dst) {
    dst[get_global_id(0)] = src[get_global_id(0)];
}
"""
K = 2  # arrays (few, so rules often meet on the same array)
values = st.integers(-50, 50).map(float)
which = st.integers(0, K - 1)


class CoherenceMachine(RuleBasedStateMachine):
    device: ha.Device

    @initialize()
    def setup(self) -> None:
        self.prg = ha.Program(SRC, device=self.device)
        self.xs = [ha.zeros(N, dtype=ha.float32, device=self.device) for _ in range(K)]
        self.model = [np.zeros(N, np.float32) for _ in range(K)]
        self.unread = [False] * K  # the device holds writes the host has not looked at
        self.raws: list[tuple[int, np.ndarray]] = []
        # pending expressions of the device path (issue 23) and their values in the model
        self.pending: list[tuple[ha.HostPtrArray, np.ndarray]] = []

    # -- host side -----------------------------------------------------------------------
    @rule(i=which, v=values)
    def host_write_whole(self, i: int, v: float) -> None:
        self.xs[i][...] = v
        self.model[i][:] = v
        self.unread[i] = False

    @rule(i=which, k=st.integers(0, N - 1), v=values)
    def host_write_element(self, i: int, k: int, v: float) -> None:
        self.xs[i][k] = v
        self.model[i][k] = v
        self.unread[i] = False

    @rule(i=which, start=st.integers(0, N - 8), v=values)
    def host_write_through_view(self, i: int, start: int, v: float) -> None:
        view = self.xs[i][start:start + 8]
        view[1:3] = v
        self.model[i][start + 1:start + 3] = v
        self.unread[i] = False

    @rule(i=which, k=st.integers(0, N - 1))
    def host_read_element(self, i: int, k: int) -> None:
        assert float(self.xs[i][k]) == self.model[i][k], "stale element read"
        self.unread[i] = False

    @rule(i=which)
    def host_read_copy(self, i: int) -> None:
        got = np.array(self.xs[i], copy=True)  # a read, not an escape
        np.testing.assert_array_equal(got, self.model[i], "stale read")
        self.unread[i] = False

    # -- raw numpy exports ---------------------------------------------------------------
    @precondition(lambda self: len(self.raws) < 3)
    @rule(i=which, sliced=st.booleans())
    def export_raw(self, i: int, sliced: bool) -> None:
        raw = np.asarray(self.xs[i])
        self.raws.append((i, raw[N // 4:] if sliced else raw))
        self.unread[i] = False

    @precondition(lambda self: self.raws)
    @rule(j=st.integers(0, 2), v=values)
    def write_raw(self, j: int, v: float) -> None:
        i, raw = self.raws[j % len(self.raws)]
        raw[2] = v
        off = 0 if raw.size == N else N // 4
        self.model[i][off + 2] = v

    @precondition(lambda self: self.raws)
    @rule(j=st.integers(0, 2))
    def read_raw(self, j: int) -> None:
        i, raw = self.raws[j % len(self.raws)]
        off = 0 if raw.size == N else N // 4
        np.testing.assert_array_equal(raw, self.model[i][off:], "raw view is stale")

    @precondition(lambda self: self.raws)
    @rule(j=st.integers(0, 2))
    def drop_raw(self, j: int) -> None:
        del self.raws[j % len(self.raws)]
        gc.collect()

    # -- device side ----------------------------------------------------------------------
    @rule(i=which, v=values)
    def launch_add(self, i: int, v: float) -> None:
        self.prg.add(N, self.xs[i], v)
        self.model[i] += np.float32(v)
        self.unread[i] = True

    @rule(i=which, v=values)
    def launch_add_second_half(self, i: int, v: float) -> None:
        self.prg.add(N // 2, self.xs[i][N // 2:], v)
        self.model[i][N // 2:] += np.float32(v)
        self.unread[i] = True

    @rule(i=which, v=values)
    def launch_fill_write_only(self, i: int, v: float) -> None:
        self.prg.fill(N, ha.write(self.xs[i]), v)
        self.model[i][:] = v
        self.unread[i] = True

    @rule(i=which, j=which)
    def launch_copy(self, i: int, j: int) -> None:
        if i == j:
            return
        self.prg.copy(N, self.xs[i], self.xs[j])
        self.model[j][:] = self.model[i]
        self.unread[j] = True

    # -- deferred element-wise operations (lazy fusion, issue 23) ------------------------------
    # (on a mapped or copied link they run on the device as pending expressions, enqueued
    # only when something needs them; on a shared link numpy computes them at once)
    @precondition(lambda self: len(self.pending) < 4)
    @rule(i=which, j=which, v=values, chained=st.booleans())
    def deferred_op(self, i: int, j: int, v: float, chained: bool) -> None:
        old = ha.set_device_compute_threshold(0)
        try:
            if chained and self.pending:
                y, ref = self.pending[-1]
                self.pending.append((y * v - self.xs[j], ref * np.float32(v) - self.model[j]))
            else:
                self.pending.append((self.xs[i] * v + self.xs[j],
                                     self.model[i] * np.float32(v) + self.model[j]))
        finally:
            ha.set_device_compute_threshold(old)

    @rule(i=which, v=values)
    def in_place_operator(self, i: int, v: float) -> None:
        old = ha.set_device_compute_threshold(0)
        try:
            self.xs[i] += v
        finally:
            ha.set_device_compute_threshold(old)
        self.model[i] += np.float32(v)

    @precondition(lambda self: self.pending)
    @rule(j=st.integers(0, 3), drop=st.booleans())
    def read_deferred(self, j: int, drop: bool) -> None:
        y, ref = self.pending[j % len(self.pending)]
        np.testing.assert_array_equal(np.array(y, copy=True), ref, "stale pending result")
        if drop:
            del self.pending[j % len(self.pending)]

    # -- explicit operations ----------------------------------------------------------------
    @rule(i=which)
    def explicit_publish(self, i: int) -> None:
        # the newest data wins: unread device writes are kept (the model does not change)
        hostptr.publish_host_writes(self.xs[i], self.device)

    @rule(i=which)
    def explicit_acquire(self, i: int) -> None:
        hostptr.acquire_device_writes(self.xs[i], self.device)
        np.testing.assert_array_equal(self.xs[i]._a, self.model[i], "acquire left stale bytes")
        self.unread[i] = False

    @rule(i=which)
    def free(self, i: int) -> None:
        hostptr.free_buffer(self.xs[i], self.device)
        np.testing.assert_array_equal(self.xs[i]._a, self.model[i], "free lost the newest data")
        self.unread[i] = False

    @invariant()
    def counters_are_consistent(self) -> None:
        s = ha.stats()
        assert s.bytes_published >= 0 and s.bytes_acquired >= 0
        if self.device.link == "shared":
            assert s.bytes_moved == 0

    def teardown(self) -> None:
        for i in range(K):
            np.testing.assert_array_equal(np.array(self.xs[i], copy=True), self.model[i])
        for y, ref in self.pending:
            np.testing.assert_array_equal(np.array(y, copy=True), ref)
        self.pending.clear()
        self.raws.clear()
        gc.collect()


@pytest.mark.slow
def test_state_machine(cl_device: ha.Device, thorough: bool) -> None:
    CoherenceMachine.device = cl_device
    run_state_machine_as_test(CoherenceMachine, settings=settings(
        max_examples=200 if thorough else 60, stateful_step_count=60 if thorough else 50,
        deadline=None, suppress_health_check=list(HealthCheck)))
