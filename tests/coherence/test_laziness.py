"""Each coherence rule proven with counters on the real device (run on a shared
link and again with HOSTARRAY_LINK=copied, where bytes really move)."""

from __future__ import annotations

import gc
import threading
import time

import numpy as np
import pytest

import hostarray as ha
from hostarray._introspect import state

pytestmark = pytest.mark.device

SRC = r"""
__kernel void add(__global float *x, const float a) { x[get_global_id(0)] += a; }
__kernel void fill(__global float *x, const float a) { x[get_global_id(0)] = a; }
__kernel void copy(__global const float *src, __global float *dst) {
    dst[get_global_id(0)] = src[get_global_id(0)];
}
__kernel void spin(__global const float *src, __global float *dst, const int iters) {
    int i = get_global_id(0); float acc = src[i];
    for (int k = 0; k < iters; ++k) acc = acc * 0.999999f + 1e-6f;
    dst[i] = acc;
}
__kernel void spin_add(__global float *x, const float v, const int spin) {
    int i = get_global_id(0);
    float acc = 1.0f;
    for (int k = 0; k < spin; ++k) acc = acc * 1.0000001f;
    x[i] += v + (acc > 1e30f ? 1.0f : 0.0f);
}
"""
N = 4096


@pytest.fixture()
def prg(cl_device):
    return ha.Program(SRC, device=cl_device)


def _stats():
    s = ha.stats()
    return s.publishes, s.acquires


def _moved(n_syncs: int, dev) -> int:
    return 0 if dev.link == "shared" else n_syncs * N * 4


def test_kernel_writes_reach_host_once(prg, cl_device) -> None:
    x = ha.zeros(N, dtype=ha.float32, device=cl_device)
    prg.add(N, x, 2.0)
    assert _stats() == (1, 0)  # published before the launch, nothing acquired yet
    assert float(x[5]) == 2.0  # one element: only its bytes
    assert _stats() == (1, 1)
    if cl_device.link != "shared":  # a shared link moves no byte
        assert ha.stats().bytes_acquired == 4
    assert np.asarray(x[:10]).sum() == 20.0  # the rest of x[:10]: the runs around x[5]
    assert _stats() == (1, 3)
    assert np.asarray(x[:10]).sum() == 20.0  # a second read: nothing moves
    assert float(x[5]) == 2.0
    assert _stats() == (1, 3)
    assert (np.asarray(x) == 2.0).all()  # the whole array: the one run still stale
    assert _stats() == (1, 4)
    assert ha.stats().bytes_acquired == _moved(1, cl_device)  # every byte once


def test_host_writes_published_once_for_two_launches(prg, cl_device) -> None:
    x = ha.zeros(N, dtype=ha.float32, device=cl_device)
    x[:] = 1
    prg.add(N, x, 1.0)
    prg.add(N, x, 1.0)
    assert _stats() == (1, 0)
    assert ha.stats().bytes_published == _moved(1, cl_device)
    assert float(x[0]) == 3.0 and ha.stats().launches == 2


def test_const_argument_leaves_host_current(prg, cl_device) -> None:
    src = ha.asarray(np.arange(N, dtype=np.float32), device=cl_device)
    dst = ha.zeros(N, dtype=ha.float32, device=cl_device)
    prg.copy(N, src, dst)
    assert not state(src).host_stale and state(dst).host_stale
    before = _stats()
    assert float(src[7]) == 7.0
    assert _stats() == before  # reading the const argument moved nothing
    assert float(dst[7]) == 7.0 and _stats()[1] == before[1] + 1


def test_write_only_argument_publishes_nothing(prg, cl_device) -> None:
    x = ha.zeros(N, dtype=ha.float32, device=cl_device)
    x[:] = 5  # host writes that the device never needs: the kernel overwrites them
    prg.fill(N, ha.write(x), 3.0)
    assert _stats() == (0, 0)
    assert (np.asarray(x) == 3).all()


def test_whole_overwrite_skips_the_acquire(prg, cl_device) -> None:
    x = ha.zeros(N, dtype=ha.float32, device=cl_device)
    prg.fill(N, x, 3.0)
    acquires = ha.stats().acquires
    x[...] = 4  # every byte overwritten: the device's 3s are dead
    assert ha.stats().acquires == acquires
    assert (np.asarray(x) == 4).all()
    prg.fill(N, x, 6.0)
    x[0] = 1  # every byte of x[0] overwritten: nothing acquired either
    x[2:4] = 7
    assert ha.stats().acquires == acquires
    assert list(np.asarray(x[:5])) == [1, 6, 7, 7, 6]  # acquires x[1] and x[4] only
    assert ha.stats().acquires == acquires + 2
    prg.fill(N, x, 8.0)
    x[8:16:2] = 1  # a strided write leaves gaps: what it covers (x[8:15]) is acquired first
    assert ha.stats().acquires == acquires + 3
    assert list(np.asarray(x[7:16])) == [8, 1, 8, 1, 8, 1, 8, 1, 8]  # x[7] and x[15]
    assert ha.stats().acquires == acquires + 5
    x[20:24] += 1  # reads what it writes
    assert ha.stats().acquires == acquires + 6
    assert float(x[20]) == 9.0 and ha.stats().acquires == acquires + 6


def test_views_see_base_writes_and_vice_versa(prg, cl_device) -> None:
    x = ha.zeros(N, dtype=ha.float32, device=cl_device)
    head = x[: N // 2]
    prg.add(N, x, 1.0)  # device writes through the base
    assert (np.asarray(head) == 1).all()
    head[3] = 10  # host write through a view
    prg.add(N, x, 1.0)
    assert float(x[3]) == 11.0 and float(x[N - 1]) == 2.0
    tail = x[N // 2:]  # byte offset N*2 is a multiple of the alignment: a sub-buffer
    prg.add(N // 2, tail, 100.0)
    assert float(x[N // 2]) == 102.0 and float(x[0]) == 2.0


def test_escaped_views_stay_coherent(prg, cl_device) -> None:
    x = ha.zeros(N, dtype=ha.float32, device=cl_device)
    raw = np.asarray(x)  # an escape: may be written behind hostarray's back
    raw[:] = 7
    prg.add(N, x, 1.0)  # publishes the raw writes, acquires after
    assert raw[0] == 8.0  # the raw view sees the kernel's write without asking
    raw[1] = 100
    prg.add(N, x, 1.0)
    assert raw[1] == 101.0
    view_of_raw = raw[10:20]
    del raw
    gc.collect()
    view_of_raw[0] = 50  # a view derived from the export keeps it escaped
    prg.add(N, x, 1.0)
    assert view_of_raw[0] == 51.0
    del view_of_raw
    gc.collect()
    assert not x._s.escaped
    ha.reset_stats()
    prg.add(N, x, 1.0)  # writes made before the views died are still published...
    prg.add(N, x, 1.0)
    assert _stats() == (1, 0)  # ...once; laziness is back
    assert float(x[10]) == 53.0


def test_host_write_waits_for_a_kernel_reading(prg, cl_device) -> None:
    src = ha.asarray(np.ones(N, dtype=np.float32), device=cl_device)
    dst = ha.zeros(N, dtype=ha.float32, device=cl_device)
    prg.spin(N, src, dst, 20000)
    waits = ha.stats().waits
    src[:] = 5  # write-after-read: must wait for spin to finish reading
    assert ha.stats().waits == waits + 1
    expected = np.float32(1)
    for _ in range(20000):
        expected = np.float32(expected * np.float32(0.999999) + np.float32(1e-6))
    np.testing.assert_allclose(np.asarray(dst), expected, rtol=1e-5)


def test_reads_do_not_wait_for_readers(prg, cl_device) -> None:
    src = ha.asarray(np.ones(N, dtype=np.float32), device=cl_device)
    dst = ha.zeros(N, dtype=ha.float32, device=cl_device)
    prg.spin(N, src, dst, 100)
    waits = ha.stats().waits
    assert float(src[0]) == 1.0
    assert ha.stats().waits == waits and _stats()[1] == 0


def test_launch_is_lazy_and_returns_a_launch(prg, cl_device) -> None:
    x = ha.zeros(N, dtype=ha.float32, device=cl_device)
    launch = prg.add(N, x, 1.0)
    assert launch.kernel == "add"
    launch.wait()
    assert launch.done
    assert state(x).host_stale  # waiting for the launch is not an acquire


def test_to_device_keeps_memory_and_attaches_lazily(cl_device) -> None:
    x = ha.zeros(N, dtype=ha.float32)
    y = x.to_device(cl_device)
    assert y._s is x._s and y.device == cl_device
    assert y._s.buffers == {}  # no buffer before the first device use
    raw = np.zeros(4 * N + 8, np.uint8)  # numpy's own memory
    start = 1 + (-raw.__array_interface__["data"][0] % 4)
    unaligned = ha.asarray(raw[start:start + 4 * N].view(np.float32))  # 1 byte off float32
    z = unaligned.to_device(cl_device)
    assert z._s is not unaligned._s  # below the element size: copied into aligned storage
    assert z._s.address % cl_device.alignment == 0
    odd = ha.asarray(np.asarray(ha.zeros(N + 1, dtype=ha.uint8))[1:])  # inside x-like storage
    assert odd.to_device(cl_device)._s is odd._s  # one memory range, one state: no copy


def test_asarray_on_device_shares_aligned_numpy_memory(cl_device) -> None:
    a = np.asarray(ha.zeros(N, dtype=ha.float32))
    x = ha.asarray(a, device=cl_device)
    assert np.shares_memory(x._a, a)
    b = np.zeros(N + 1, dtype=np.float32)[1:]  # numpy's memory, 4 bytes past its start
    assert np.shares_memory(ha.asarray(b, device=cl_device)._a, b)  # element-aligned: shared
    raw = np.zeros(4 * N + 8, np.uint8)
    start = 1 + (-raw.__array_interface__["data"][0] % 4)
    c = raw[start:start + 4 * N].view(np.float32)  # 1 byte off: below the element size
    assert not np.shares_memory(ha.asarray(c, device=cl_device)._a, c)
    with pytest.raises(ValueError, match="alignment"):
        ha.asarray(c, device=cl_device, copy=False)


# -- every wait for in-flight launches is counted --------------------------------------------------

@pytest.mark.parametrize("read", [
    lambda x: float(x[0]), lambda x: x.tolist(), lambda x: np.asarray(x, copy=True),
    lambda x: repr(x), lambda x: ha.sum(x),
], ids=["float-index", "tolist", "asarray-copy", "repr", "ha.sum"])
def test_a_host_read_that_blocks_for_a_launch_counts_a_wait(prg, read) -> None:
    x = ha.zeros(64, dtype=ha.float32, device=prg.device)
    prg.add(64, x, 1.0)
    np.asarray(x, copy=True)  # synced: the next read does not wait
    ha.reset_stats()
    prg.spin_add(64, x, 1.0, np.int32(3_000_000))
    read(x)
    assert ha.stats().waits == 1
    assert ha.stats().acquires == 1
    read(x)  # nothing in flight any more
    assert ha.stats().waits == 1


def test_a_read_of_a_finished_launch_counts_no_wait(prg) -> None:
    x = ha.zeros(64, dtype=ha.float32, device=prg.device)
    launch = prg.add(64, x, 1.0)
    launch.event.wait()
    ha.reset_stats()
    assert x.tolist() == [1.0] * 64
    assert (ha.stats().waits, ha.stats().acquires) == (0, 1)


def test_host_write_blocked_by_another_threads_launch_counts_a_wait(prg) -> None:
    x = ha.zeros(64, dtype=ha.float32, device=prg.device)
    started = threading.Event()

    def launch() -> None:
        prg.spin_add(64, x, 1.0, np.int32(3_000_000))
        started.set()

    t = threading.Thread(target=launch)
    t.start()
    assert started.wait(60)
    t.join(60)
    ha.reset_stats()
    time.sleep(0)
    x[3] = 9.0
    assert ha.stats().waits == 1
    assert x.tolist()[:4] == [1.0, 1.0, 1.0, 9.0]
