"""Lifetime: host memory outlives every launch, map and device buffer that uses
it; attach/free and create/launch/drop cycles leak neither OpenCL buffers nor
memory; exiting with launches in flight neither hangs nor crashes.

Launches are held "in flight" deterministically: a marker waiting on an
OpenCL user event is enqueued first on hostarray's in-order queue, so
nothing after it runs until the test completes the event.  Anything that
blocks on the queue (a publish or acquire maps) would wait for the gate, so
arrays are made current on the device before it closes.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pyopencl as cl
import pytest

import hostarray as ha
from hostarray import hostptr

from ._support import SPIN_SRC, live_cl_buffers, rss_bytes, run_python

pytestmark = pytest.mark.device

CYCLES = 10_000
RSS_SLACK = 32 * 2**20  # bytes of RSS growth allowed over 10,000 cycles (allocator noise)


@pytest.fixture()
def prg(cl_device: ha.Device):
    return ha.Program(SPIN_SRC, device=cl_device)


class Gate:
    """Holds every later command of the device's queue until :meth:`open`."""

    def __init__(self, dev: ha.Device) -> None:
        q = hostptr.queue(dev)
        self.event = cl.UserEvent(q.context)
        self.marker = cl.enqueue_marker(q, wait_for=[self.event])

    def open(self) -> None:
        if self.event.command_execution_status != cl.command_execution_status.COMPLETE:
            self.event.set_status(cl.command_execution_status.COMPLETE)

    def __enter__(self) -> Gate:
        return self

    def __exit__(self, *exc: object) -> None:
        self.open()  # never leave the queue blocked, whatever happened


def test_dropped_array_stays_alive_until_its_launch_ends(prg, cl_device: ha.Device) -> None:
    n = 64 * 1024
    x = ha.zeros(n, dtype=ha.float32, device=cl_device)
    x[...] = 1.0
    prg.spin_add(n, x, 0.0, 0)  # publish now: a publish would block behind the gate
    storage = weakref.ref(x._s)
    with Gate(cl_device) as gate:
        launch = prg.spin_add(n, x, 41.0, 10)
        assert not launch.done
        del x
        gc.collect()
        assert storage() is not None, "the storage died while its launch was queued"
        # memory freed too early would be reused by these and overwritten by the kernel
        others = [np.full(n, -7.0, np.float32) for _ in range(16)]
        others += [np.asarray(ha.full(n, -7.0, dtype=ha.float32)) if hasattr(ha, "full")
                   else np.full(n, -7.0, np.float32) for _ in range(4)]
        gate.open()
    launch.wait()
    for o in others:
        assert (o == -7.0).all(), "a launch wrote into memory freed under it"
    del launch
    # the launch no longer keeps the storage once a later launch prunes finished ones
    y = ha.zeros(16, dtype=ha.float32, device=cl_device)
    prg.spin_add(16, y, 1.0, 0).wait()
    prg.spin_add(16, y, 1.0, 0)
    gc.collect()
    assert storage() is None, "a finished launch kept its storage alive"


def test_dropped_array_is_released_once_the_host_synced(prg, cl_device) -> None:
    """A finished launch does not keep a dropped array's memory until some later
    launch: an acquire from the device (which finishes every earlier launch
    there) lets go of it."""
    n = 4096
    x = ha.zeros(n, dtype=ha.float32, device=cl_device)
    prg.spin_add(n, x, 1.0, 0)
    np.testing.assert_array_equal(np.array(x, copy=True), np.ones(n, np.float32))
    storage = weakref.ref(x._s)
    del x
    gc.collect()
    assert storage() is None, "a finished launch kept a dropped array alive"
    # dropped unread: released when the host syncs with the device through another array
    y = ha.zeros(n, dtype=ha.float32, device=cl_device)
    z = ha.zeros(n, dtype=ha.float32, device=cl_device)
    prg.spin_add(n, z, 1.0, 0)
    prg.spin_add(n, y, 1.0, 0)
    storage = weakref.ref(z._s)
    del z
    np.array(y, copy=True)
    gc.collect()
    assert storage() is None, "a finished launch kept a dropped array alive"


def test_view_keeps_data_of_dropped_array_written_by_a_launch(prg, cl_device) -> None:
    n = 8192
    x = ha.zeros(n, dtype=ha.float32, device=cl_device)
    tail = x[n // 2:]
    prg.spin_add(n, x, 0.0, 0)
    with Gate(cl_device):
        prg.spin_add(n, x, 3.0, 10)
        del x
        gc.collect()
    np.testing.assert_array_equal(np.array(tail, copy=True), np.full(n // 2, 3.0, np.float32))


def test_escape_written_then_dropped_while_launch_in_flight(prg, cl_device) -> None:
    """Raw views written and dropped around launches that run long: no write
    is lost, every launch result is visible."""
    n = 4096
    x = ha.zeros(n, dtype=ha.float32, device=cl_device)
    y = ha.zeros(n, dtype=ha.float32, device=cl_device)
    raw = np.asarray(x)
    raw[:] = 5.0
    prg.spin_add(n, x, 1.0, 20000)  # escaped: published before, acquired after
    raw[:8] += 10.0
    del raw
    gc.collect()
    prg.spin_add(n, y, 1.0, 20000)  # unrelated launch in flight while x is read
    want = np.full(n, 6.0, np.float32)
    want[:8] += 10.0
    np.testing.assert_array_equal(np.array(x, copy=True), want)
    prg.spin_add(n, x, 1.0, 0)  # the raw writes reach the device after the escape ended
    np.testing.assert_array_equal(np.array(x, copy=True), want + 1)


def test_free_buffer_while_launch_in_flight_keeps_the_result(prg, cl_device) -> None:
    n = 4096
    x = ha.zeros(n, dtype=ha.float32, device=cl_device)
    prg.spin_add(n, x, 0.0, 0)
    with Gate(cl_device) as gate:
        prg.spin_add(n, x, 2.0, 10)
        gate.open()  # free_buffer waits for the launch: it must be able to finish
        assert hostptr.free_buffer(x, cl_device)
    assert hostptr.host_link(x, cl_device) is None
    np.testing.assert_array_equal(x._a, np.full(n, 2.0, np.float32))  # acquired by the free
    prg.spin_add(n, x, 1.0, 0)  # a launch re-creates the freed buffer
    assert hostptr.host_link(x, cl_device) is not None
    np.testing.assert_array_equal(np.array(x, copy=True), np.full(n, 3.0, np.float32))


def test_attach_free_cycles_leak_nothing(cl_device: ha.Device) -> None:
    x = ha.zeros(4096, dtype=ha.float32, device=cl_device)
    for _ in range(200):  # warm-up: caches, allocator pools
        hostptr.attach(x, cl_device)
        hostptr.free_buffer(x, cl_device)
    buffers0, rss0 = live_cl_buffers(), rss_bytes()
    for _ in range(CYCLES):
        hostptr.attach(x, cl_device)
        hostptr.free_buffer(x, cl_device)
    buffers1, rss1 = live_cl_buffers(), rss_bytes()
    print(f"\n{CYCLES} attach/free cycles: live cl.Buffer {buffers0} -> {buffers1}, "
          f"RSS {rss0 / 2**20:.1f} -> {rss1 / 2**20:.1f} MiB")
    assert buffers1 <= buffers0
    assert rss1 - rss0 < RSS_SLACK


def test_create_launch_drop_cycles_leak_nothing(prg, cl_device: ha.Device) -> None:
    def cycle(i: int) -> None:
        z = ha.zeros(1024 + (i % 7) * 32, dtype=ha.float32, device=cl_device)
        prg.spin_add(z.shape[0], z, 1.0, 0)  # dropped unread, launch maybe in flight

    keeper = ha.zeros(16, dtype=ha.float32, device=cl_device)

    def settle() -> None:
        # finished launches are let go when the next launch on the device is recorded
        hostptr.queue(cl_device).finish()
        prg.spin_add(16, keeper, 0.0, 0).wait()

    for i in range(200):
        cycle(i)
    settle()
    buffers0, rss0 = live_cl_buffers(), rss_bytes()
    for i in range(CYCLES):
        cycle(i)
    settle()
    buffers1, rss1 = live_cl_buffers(), rss_bytes()
    print(f"\n{CYCLES} create/launch/drop cycles: live cl.Buffer {buffers0} -> {buffers1}, "
          f"RSS {rss0 / 2**20:.1f} -> {rss1 / 2**20:.1f} MiB")
    assert buffers1 <= buffers0
    assert rss1 - rss0 < RSS_SLACK


EXIT_SCRIPT = r"""
import sys, numpy as np, hostarray as ha
dev = [d for d in ha.devices() if d.framework == "opencl"][0]
prg = ha.Program('''
__kernel void spin_add(__global float *x, const float v, const int spin) {
    // one work-item spins: as long on a GPU as on a CPU (a GPU runs the others at once)
    int i = get_global_id(0); float acc = 1.0f;
    if (i == 0) for (int k = 0; k < spin; ++k) acc = acc * 1.0000001f;
    x[i] += v + (acc > 1e30f ? 1.0f : 0.0f);
}''', device=dev)
mode = sys.argv[1] if len(sys.argv) > 1 else "{mode}"
keep = []
for i in range(8):
    x = ha.zeros(16384, dtype=ha.float32, device=dev)
    if mode == "escaped":  # raw views alive at exit (launches on x then run eagerly)
        keep.append(np.asarray(x[:16]))
    prg.spin_add(16384, x, 1.0, 20_000_000)
    if mode == "kept":
        keep.append(x)
    del x
y = ha.zeros(16384, dtype=ha.float32, device=dev)
last = prg.spin_add(16384, y, 1.0, 20_000_000)
if mode != "kept":
    del y
print("launched", "pending" if not last.done else "done", flush=True)
if mode == "exit":
    sys.exit(0)
"""


@pytest.mark.parametrize("mode", ["dropped", "kept", "escaped", "exit"])
def test_interpreter_exit_with_pending_launches(mode: str) -> None:
    r = run_python(EXIT_SCRIPT.replace("{mode}", mode), timeout=120)
    assert r.returncode == 0, f"exit code {r.returncode}; stderr: {r.stderr[-2000:]}"
    assert "launched pending" in r.stdout, "the launches finished before the exit"
    assert "Traceback" not in r.stderr and "Segmentation" not in r.stderr, r.stderr[-2000:]
