"""The coherence model at scale: a hypothesis state machine over several
arrays that share kernels, views at offsets (sub-buffers), every working
device (the host and each OpenCL device), frees and re-attaches, raw numpy
views created, written and dropped, explicit publish/acquire, arrays dropped
while their launches run, and refused launches (misaligned views) that must
change nothing.

Every observed value is compared with a plain-numpy model: a single
difference is a stale read or a lost write.  The default run is sized for
CI; ``--thorough`` / ``HOSTARRAY_THOROUGH=1`` runs at least 10,000 steps
(counted, and asserted).
"""

from __future__ import annotations

import gc
import os
import re
from pathlib import Path
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

from ._support import SPIN_SRC, own_devices_first, run_python, second_driver, two_devices_env

pytestmark = pytest.mark.device

K = 4  # arrays
N = 1024  # float32 elements per array
SRC = SPIN_SRC + r"""
__kernel void fill(__global float *x, const float v) { x[get_global_id(0)] = v; }
__kernel void copy(__global const float *src, __global float *dst) {
    dst[get_global_id(0)] = src[get_global_id(0)];
}
__kernel void axpy(const float a, __global const float *x, __global const float *y,
                   __global float *out) {
    int i = get_global_id(0); out[i] = a * x[i] + y[i];
}
"""

values = st.integers(-40, 40).map(float)
which = st.integers(0, K - 1)
spins = st.sampled_from([0, 0, 0, 2000, 20000])  # some launches overlap the host's next steps


class ScaleMachine(RuleBasedStateMachine):
    """Arrays ``xs[i]`` (handles per device over one storage) vs numpy ``model[i]``."""

    devices: list[ha.Device] = []  # OpenCL devices under test (set by the test)
    interpreted: set[ha.Device] = set()  # of those, Oclgrind's: it interprets kernels
    steps = 0  # steps run by every instance, for the report

    @initialize(seed=st.integers(0, 2**16))
    def setup(self, seed: int) -> None:
        self.progs = {d: ha.Program(SRC, device=d) for d in self.devices}
        # view granularity: offsets the strictest device accepts for sub-buffers
        self.grain = max(d.alignment for d in self.devices) // 4
        self.rng = np.random.default_rng(seed)
        self.model: list[np.ndarray] = []
        self.xs: list[dict[Any, ha.HostPtrArray]] = []
        for _ in range(K):
            self.model.append(np.zeros(N, np.float32))
            self.xs.append({})
        # (model of the array it views, element offset, raw view): a raw view keeps the
        # storage alive after its array is replaced, so it keeps its own model too
        self.raws: list[tuple[np.ndarray, int, np.ndarray]] = []
        self.launches: list[Any] = []
        # devices whose kernels wrote bytes the host has not read back yet (a host read or
        # partial write acquires only the bytes it touches, so it clears nothing)
        self.writers: list[set[Any]] = [set() for _ in range(K)]
        for i in range(K):
            self._fresh(i, i % 3)

    # -- helpers ----------------------------------------------------------------------------
    def _fresh(self, i: int, how: int) -> None:
        """Replace array ``i`` by a new one (the old one may still be used by launches)."""
        data = self.rng.integers(-20, 20, N).astype(np.float32)
        dev = self.devices[0]
        if how == 0:
            x = ha.asarray(data, device=dev, copy=True)
        elif how == 1:
            x = ha.zeros(N, dtype=ha.float32, device=dev)
            x[...] = ha.asarray(data)
        else:  # numpy memory hostarray did not allocate, attached eagerly
            align = self.grain * 4
            raw = np.empty(N + align // 4, np.float32)
            skip = (-raw.ctypes.data % align) // 4
            host = raw[skip:skip + N]
            host[:] = data
            x = hostptr.of_numpy(dev, host)
            del raw, host  # x keeps the memory alive
        handles: dict[Any, ha.HostPtrArray] = {"cpu": x.to_device("cpu")}
        for d in self.devices:
            handles[d] = x.to_device(d)
            assert handles[d]._s is x._s, "to_device copied page-aligned memory"
        self.xs[i] = handles
        self.model[i] = data.copy()
        self.writers[i] = set()

    def _view(self, i: int, side: Any, start: int, length: int) -> ha.HostPtrArray:
        return self.xs[i][side][start:start + length]

    def _span(self, data: st.DataObject, aligned: bool = True) -> tuple[int, int]:
        g = self.grain
        if aligned:
            start = data.draw(st.integers(0, N // g - 1)) * g
        else:
            start = data.draw(st.integers(1, N - 2).filter(lambda s: s % g))
        length = data.draw(st.integers(1, N - start))
        return start, length

    def _check(self, i: int, got: np.ndarray, start: int, what: str) -> None:
        want = self.model[i][start:start + got.size]
        if not np.array_equal(got, want):
            bad = np.flatnonzero(got != want)
            raise AssertionError(f"{what}: array {i} differs at {bad[:8] + start} "
                                 f"(got {got[bad[:4]]}, model {want[bad[:4]]})")

    # -- host side -----------------------------------------------------------------------------
    @rule(i=which, side=st.integers(0, 2), data=st.data(), v=values)
    def host_write(self, i: int, side: int, data: st.DataObject, v: float) -> None:
        h = self.xs[i]["cpu" if side == 0 else self.devices[(side - 1) % len(self.devices)]]
        start = data.draw(st.integers(0, N - 1))
        stop = data.draw(st.integers(start + 1, N))
        h[start:stop] = v
        self.model[i][start:stop] = v

    @rule(i=which, v=values)
    def host_write_whole(self, i: int, v: float) -> None:
        self.xs[i]["cpu"][...] = v
        self.model[i][:] = v
        self.writers[i].clear()

    @rule(i=which, data=st.data())
    def host_read(self, i: int, data: st.DataObject) -> None:
        side = data.draw(st.sampled_from(["cpu", *self.devices]))
        start = data.draw(st.integers(0, N - 1))
        stop = data.draw(st.integers(start + 1, N))
        got = np.array(self.xs[i][side][start:stop], copy=True)  # a read, not an escape
        self._check(i, got, start, "stale read")

    @rule(i=which, k=st.integers(0, N - 1))
    def host_read_element(self, i: int, k: int) -> None:
        got = np.array(self.xs[i]["cpu"][k], copy=True)
        assert got == self.model[i][k], f"stale element {k} of array {i}"

    # -- raw numpy views (escapes) --------------------------------------------------------------
    @precondition(lambda self: len(self.raws) < 4)
    @rule(i=which, data=st.data())
    def export_raw(self, i: int, data: st.DataObject) -> None:
        side = data.draw(st.sampled_from(["cpu", *self.devices]))
        start = data.draw(st.integers(0, N - 1))
        raw = np.asarray(self.xs[i][side])[start:]  # a view derived from the export
        self._check(i, raw.copy(), start, "raw export is stale")
        self.raws.append((self.model[i], start, raw))

    @precondition(lambda self: self.raws)
    @rule(j=st.integers(0, 3), k=st.integers(0, N - 1), v=values)
    def write_raw(self, j: int, k: int, v: float) -> None:
        model, start, raw = self.raws[j % len(self.raws)]
        k %= raw.size
        raw[k] = v
        model[start + k] = v
        for i in range(K):
            if self.model[i] is model:
                self.writers[i].clear()

    @precondition(lambda self: self.raws)
    @rule(j=st.integers(0, 3))
    def read_raw(self, j: int) -> None:
        model, start, raw = self.raws[j % len(self.raws)]
        np.testing.assert_array_equal(raw, model[start:], "raw view is stale")

    @precondition(lambda self: self.raws)
    @rule(j=st.integers(0, 3))
    def drop_raw(self, j: int) -> None:
        del self.raws[j % len(self.raws)]
        gc.collect()

    # -- launches ----------------------------------------------------------------------------------
    def _prog(self, d: int) -> tuple[ha.Device, Any]:
        dev = self.devices[d % len(self.devices)]
        return dev, self.progs[dev]

    def _keep(self, launch: Any) -> None:
        self.launches.append(launch)
        del self.launches[:-4]

    @rule(i=which, d=st.integers(0, 1), data=st.data(), v=values, spin=spins,
          through_host_handle=st.booleans())
    def launch_add(self, i: int, d: int, data: st.DataObject, v: float, spin: int,
                   through_host_handle: bool) -> None:
        dev, prg = self._prog(d)
        if dev in self.interpreted:  # 20000 steps x 1024 items: 5 s under Oclgrind
            spin = min(spin, 20)
        start, length = self._span(data)
        # a host-side handle of the same storage is accepted by a kernel on any device
        x = self._view(i, "cpu" if through_host_handle else dev, start, length)
        self._keep(prg.spin_add(length, x, v, spin))
        self.model[i][start:start + length] += np.float32(v)
        self.writers[i].add(dev)

    @rule(i=which, d=st.integers(0, 1), data=st.data(), v=values)
    def launch_fill_write_only(self, i: int, d: int, data: st.DataObject, v: float) -> None:
        dev, prg = self._prog(d)
        start, length = self._span(data)
        self._keep(prg.fill(length, ha.write(self._view(i, dev, start, length)), v))
        self.model[i][start:start + length] = v
        self.writers[i].add(dev)

    @rule(i=which, j=which, d=st.integers(0, 1), data=st.data())
    def launch_copy(self, i: int, j: int, d: int, data: st.DataObject) -> None:
        dev, prg = self._prog(d)
        g = self.grain
        s1 = data.draw(st.integers(0, N // g - 1)) * g
        s2 = data.draw(st.integers(0, N // g - 1)) * g
        length = data.draw(st.integers(1, N - max(s1, s2)))
        if i == j and s1 < s2 + length and s2 < s1 + length:
            return  # overlapping source and destination: a data race in the kernel itself
        self._keep(prg.copy(length, self._view(i, dev, s1, length),
                            self._view(j, dev, s2, length)))
        self.model[j][s2:s2 + length] = self.model[i][s1:s1 + length]
        self.writers[j].add(dev)

    @rule(a=which, b=which, c=which, d=st.integers(0, 1), f=st.integers(-3, 3).map(float))
    def launch_axpy(self, a: int, b: int, c: int, d: int, f: float) -> None:
        dev, prg = self._prog(d)
        if c in (a, b):
            return
        self._keep(prg.axpy(N, f, self.xs[a][dev], self.xs[b][dev], self.xs[c][dev]))
        self.model[c][:] = np.float32(f) * self.model[a] + self.model[b]
        self.writers[c].add(dev)

    @rule(i=which, data=st.data(), v=values)
    def launch_misaligned_view_is_refused(self, i: int, data: st.DataObject, v: float) -> None:
        dev, prg = self._prog(0)
        start, length = self._span(data, aligned=False)
        if (start * 4) % dev.alignment == 0:
            return
        before = ha.stats()
        with pytest.raises(hostptr.Refused, match="a sub-buffer must start on a multiple of"):
            prg.fill(length, self._view(i, dev, start, length), v)
        after = ha.stats()
        assert (after.launches, after.publishes) == (before.launches, before.publishes), \
            "a refused launch synchronised something"

    @precondition(lambda self: self.launches)
    @rule(j=st.integers(0, 3))
    def wait_for_a_launch(self, j: int) -> None:
        self.launches[j % len(self.launches)].wait()

    # -- arrays replaced, buffers freed and re-attached -------------------------------------------
    @rule(i=which, how=st.integers(0, 2), keep_view=st.booleans())
    def replace_array(self, i: int, how: int, keep_view: bool) -> None:
        """Drop array ``i`` (maybe while its launches run) and make a new one."""
        old_view = self.xs[i]["cpu"][N // 2:] if keep_view else None
        old_model = self.model[i][N // 2:].copy()
        self._fresh(i, how)
        gc.collect()
        if old_view is not None:  # a view keeps the old storage and its data alive
            np.testing.assert_array_equal(np.array(old_view, copy=True), old_model,
                                          "a view of a dropped array lost its data")

    @rule(i=which, d=st.integers(0, 1))
    def free_buffer(self, i: int, d: int) -> None:
        dev = self.devices[d % len(self.devices)]
        hostptr.free_buffer(self.xs[i][dev], dev)
        assert hostptr.host_link(self.xs[i][dev], dev) is None
        if len(self.devices) == 1:  # the only device's data was acquired by the free itself
            self._check(i, self.xs[i]["cpu"]._a.copy(), 0, "free lost the newest data")
        self.writers[i].discard(dev)  # the free acquired what only it held

    @rule(i=which, d=st.integers(0, 1))
    def attach(self, i: int, d: int) -> None:
        dev = self.devices[d % len(self.devices)]
        x = self.xs[i][dev]
        if hostptr.host_link(x, dev) is not None:
            with pytest.raises(hostptr.BufferExists):
                hostptr.attach(x, dev)
        else:
            link = hostptr.attach(x, dev)
            assert link.kind == dev.link and link.nbytes == N * 4

    # -- explicit synchronisation ---------------------------------------------------------------
    @rule(i=which, d=st.integers(0, 1))
    def explicit_acquire(self, i: int, d: int) -> None:
        dev = self.devices[d % len(self.devices)]
        hostptr.acquire_device_writes(self.xs[i][dev], dev)
        if self.writers[i] == {dev} and not self.xs[i]["cpu"]._s.escaped:
            before = ha.stats().acquires
            self._check(i, self.xs[i]["cpu"]._a.copy(), 0, "acquire left stale bytes")
            np.array(self.xs[i]["cpu"], copy=True)
            assert ha.stats().acquires == before, "a read after an explicit acquire acquired"
        self.writers[i].discard(dev)

    @rule(i=which, d=st.integers(0, 1))
    def explicit_publish(self, i: int, d: int) -> None:
        # the newest data wins: unread device writes on any device are kept
        dev = self.devices[d % len(self.devices)]
        hostptr.publish_host_writes(self.xs[i][dev], dev)
        self._check(i, np.array(self.xs[i]["cpu"], copy=True), 0, "publish lost data")
        self.writers[i].clear()

    # -- invariants -------------------------------------------------------------------------------
    @invariant()
    def count_and_check_counters(self) -> None:
        type(self).steps += 1
        s = ha.stats()
        assert min(s.publishes, s.acquires, s.bytes_published, s.bytes_acquired, s.waits) >= 0
        if all(d.link == "shared" for d in self.devices):
            assert s.bytes_moved == 0, "bytes moved on a shared link"

    def teardown(self) -> None:
        for i in range(K):
            for side, h in self.xs[i].items():
                self._check(i, np.array(h, copy=True), 0, f"final read through {side}")
        self.raws.clear()
        self.launches.clear()
        gc.collect()


@pytest.mark.slow
def test_state_machine_at_scale(cl_device: ha.Device, thorough: bool) -> None:
    devs = [d for d in ha.devices() if d.framework == "opencl"]
    second = os.environ.get("HOSTARRAY_TEST_SECOND_PLATFORM")
    if second:  # the machine's own device first, the test-only second driver's last
        devs = own_devices_first(devs, second)
        devs = [devs[0], devs[-1]] if len(devs) > 1 else devs
    devs = devs[:2]
    want = int(os.environ.get("HOSTARRAY_EXPECT_OPENCL_DEVICES", "1"))
    assert len(devs) >= want, f"expected {want} OpenCL devices, found {devs}"
    ScaleMachine.devices = devs
    ScaleMachine.interpreted = {d for d in devs if d._cl_device.platform.name == "Oclgrind"}
    ScaleMachine.steps = 0
    examples, steps = (250, 60) if thorough else (20, 30)
    run_state_machine_as_test(ScaleMachine, settings=settings(
        max_examples=examples, stateful_step_count=steps, deadline=None,
        derandomize=not thorough, suppress_health_check=list(HealthCheck)))
    print(f"\nstate machine: {ScaleMachine.steps} steps on {[f'{d} ({d.name})' for d in devs]} "
          f"(link {[d.link for d in devs]})")
    if thorough:
        assert ScaleMachine.steps >= 10_000, f"thorough mode ran only {ScaleMachine.steps} steps"
    else:
        assert ScaleMachine.steps >= 100


def test_write_only_partial_view_keeps_the_rest(cl_device: ha.Device) -> None:
    """Found by the machine on a copied link: ``ha.write`` on part of an array
    published nothing, so acquiring the whole buffer back overwrote the rest of
    the array with whatever the device buffer held."""
    prg = ha.Program(SRC, device=cl_device)
    g = cl_device.alignment // 4
    data = np.arange(4 * g, dtype=np.float32)
    x = ha.asarray(data, device=cl_device, copy=True)
    hostptr.attach(x, cl_device)  # a fresh device buffer that holds nothing yet
    prg.fill(g, ha.write(x[2 * g:3 * g]), -1.0)
    hostptr.free_buffer(x, cl_device)  # acquires the newest data from the device
    want = data.copy()
    want[2 * g:3 * g] = -1.0
    np.testing.assert_array_equal(np.array(x, copy=True), want)


def test_state_machine_on_two_opencl_devices(tmp_path: Path, thorough: bool) -> None:
    """The machine again, in a subprocess that also sees the PyPI PoCL (or Oclgrind
    where it does not work here: ``second_driver``) as a second OpenCL device: one
    storage then has buffers on two devices, and a launch on one after a launch on the
    other must acquire from the first and publish to the second."""
    env = {**two_devices_env(tmp_path),
           "HOSTARRAY_EXPECT_OPENCL_DEVICES": "2", "HOSTARRAY_THOROUGH": "1" if thorough else "0"}
    here = Path(__file__).resolve()
    r = run_python("import sys, pytest\n"
                   f"sys.exit(pytest.main(['-q', '-s', '-p', 'no:cacheprovider', "
                   f"'{here}::test_state_machine_at_scale']))\n", env=env, timeout=1800)
    why = f"second device: {second_driver()}\n"
    assert r.returncode == 0, why + r.stdout[-4000:] + r.stderr[-2000:]
    steps = [ln for ln in r.stdout.splitlines() if ln.startswith("state machine:")]
    assert steps, why + r.stdout[-2000:]
    specs = re.findall(r"'(opencl:\d+:\d+) ", steps[0])
    assert len(set(specs)) == 2, why + steps[0]  # two distinct OpenCL devices
    print("\n" + steps[0])
