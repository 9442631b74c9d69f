"""Device-born results need no host memory until the host looks (issue 23, item 3).

A result of the device compute path off a shared link is a device-only buffer over host
memory that is address space only: the host's first touch commits pages, and each host
access path commits and acquires the bytes it needs, no more.  Checked three ways: the
transfer counters (``bytes_acquired``), ``ha.stats().host_bytes_committed`` (what the
coherence state says the host touched) and the OS itself (``mincore``: the resident pages
of the result's memory).  The tests run off a shared link on every CI pass (``off_shared``:
copied buffers where the device's own link is shared; ``HOSTARRAY_LINK=copied`` too).
"""

from __future__ import annotations

import ctypes
import gc
import pickle
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import hostarray as ha
from hostarray import hostptr
from hostarray._compute import pool
from hostarray._storage import HUGE_FROM, PAGE_SIZE
from tests._device_helpers import device_newest

pytestmark = pytest.mark.device

N = (2 << 20) // 4  # float32 elements in 2 MiB: below HUGE_FROM, committed page by page
BUMP = "__kernel void bump(__global float *x) { size_t i = get_global_id(0); x[i] += 1; }"
READ = ("__kernel void total(__global const float *x, __global float *out) "
        "{ if (get_global_id(0) == 0) out[0] = x[0] + x[1]; }")

_libc = ctypes.CDLL(None, use_errno=True)
_HAS_MINCORE = sys.platform.startswith("linux") and hasattr(_libc, "mincore")


@pytest.fixture
def dev(off_shared: ha.Device, device_path: None) -> Iterator[ha.Device]:
    yield off_shared


def resident(x: ha.HostPtrArray) -> int:
    """Bytes of ``x``'s storage memory the OS has pages for (``mincore``), or -1 where it
    can't be asked."""
    if not _HAS_MINCORE:
        return -1
    addr, n = x._s.address, x._s.nbytes
    pages = -(-n // PAGE_SIZE)
    vec = (ctypes.c_ubyte * pages)()
    assert _libc.mincore(ctypes.c_void_p(addr), ctypes.c_size_t(n), vec) == 0
    return sum(v & 1 for v in vec) * PAGE_SIZE


def _data(n: int = N) -> np.ndarray:
    return np.linspace(-2.0, 2.0, n, dtype=np.float32)


def _chain(dev: ha.Device, n: int = N) -> tuple[ha.HostPtrArray, np.ndarray]:
    """``((x * x + 1) * 0.5 - x) / 3`` of device-newest ``x`` and numpy's answer."""
    a = _data(n)
    x = device_newest(a, dev)  # (a kernel copied a onto the device: newest there)
    want = (((a * a + 1) * np.float32(0.5) - a) / np.float32(3)).astype(np.float32)
    return ((x * x + 1) * 0.5 - x) / 3, want


def _fresh(dev: ha.Device, n: int = N) -> tuple[ha.HostPtrArray, np.ndarray]:
    y, want = _chain(dev, n)
    assert ha.stats().device_ops >= 5
    ha.reset_stats()
    return y, want


def test_a_chain_result_read_once_acquires_and_commits_its_bytes_only(dev: ha.Device) -> None:
    ha.reset_stats()
    y, want = _chain(dev)
    s = ha.stats()
    assert s.device_ops == 5 and s.bytes_acquired == 0
    assert s.host_bytes_committed == 0  # four temporaries and the result: no host memory
    assert resident(y) in (0, -1)
    assert float(y[5]) == pytest.approx(float(want[5]), rel=1e-6)
    s = ha.stats()
    assert (s.acquires, s.bytes_acquired, s.host_bytes_committed) == (1, 4, PAGE_SIZE)
    assert resident(y) in (PAGE_SIZE, -1)
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-6)
    s = ha.stats()
    assert s.bytes_acquired == y.nbytes  # the rest, once; the element not again
    assert s.host_bytes_committed == y.nbytes
    assert resident(y) in (y.nbytes, -1)


def test_a_large_result_commits_huge_pages_as_the_host_reads(dev: ha.Device) -> None:
    n = 2 * HUGE_FROM // 4
    y, want = _fresh(dev, n)
    assert float(y[n - 1]) == pytest.approx(float(want[-1]), rel=1e-6)
    s = ha.stats()
    assert s.bytes_acquired == 4 and 0 < s.host_bytes_committed < y.nbytes // 2
    assert resident(y) <= s.host_bytes_committed  # the OS committed no more than that


# every host access path: what it returns, checked against numpy, and its bytes: acquired
# (``None``: all of them), committed no more than whole pages around them
_PATHS = {
    "index": (lambda y: float(y[7]), lambda w: float(w[7]), 4),
    "slice view": (lambda y: np.asarray(y[100:108]), lambda w: w[100:108], 32),
    "__array__ copy": (lambda y: y.__array__(copy=True), lambda w: w, None),
    "np.asarray": (lambda y: np.asarray(y).copy(), lambda w: w, None),
    "dlpack": (lambda y: np.from_dlpack(y).copy(), lambda w: w, None),
    "pickle": (lambda y: np.asarray(pickle.loads(pickle.dumps(y))), lambda w: w, None),
    # (iterating a 1-D array takes one snapshot of it, acquired once: all of it)
    "iteration": (lambda y: [float(v) for v, _ in zip(y, range(3))],
                  lambda w: [float(v) for v in w[:3]], None),
    "tolist of a view": (lambda y: y[:4].tolist(), lambda w: w[:4].tolist(), 16),
    "bytes": (lambda y: np.frombuffer(bytes(y), np.float32), lambda w: w, None),
    "to_device cpu": (lambda y: np.asarray(y.to_device("cpu")[9:11]), lambda w: w[9:11], 8),
    # np.median has no device counterpart: numpy on the host reads the 16 elements
    "numpy function": (lambda y: np.median(y[:16]), lambda w: np.median(w[:16]), 64),
    # np.sum runs on the device (issue 22): reading its 0-d result acquires 4 bytes
    "numpy function on the device": (lambda y: float(np.sum(y[:16])),
                                     lambda w: float(np.sum(w[:16])), 4),
    "repr": (lambda y: repr(y).startswith("HostPtrArray(") and repr(y[:2]), lambda w: None, None),
}


@pytest.mark.parametrize("path", list(_PATHS))
def test_each_host_access_path_acquires_and_commits_what_it_reads(dev: ha.Device,
                                                                  path: str) -> None:
    read, expect, nbytes = _PATHS[path]
    y, want = _fresh(dev)
    got = read(y)
    if path == "repr":
        assert got  # printing summarises: values checked below
    elif isinstance(got, list):
        np.testing.assert_allclose(got, expect(want), rtol=1e-6)
    else:
        np.testing.assert_allclose(np.asarray(got), expect(want), rtol=1e-6)
    s = ha.stats()
    wanted = y.nbytes if nbytes is None else nbytes
    pages = -(-wanted // PAGE_SIZE) + 1  # its pages, one more where it straddles two
    if path != "repr":
        assert s.bytes_acquired == wanted, path
        assert s.bytes_acquired <= s.host_bytes_committed <= min(pages * PAGE_SIZE, y.nbytes)
    assert 0 <= resident(y) <= s.host_bytes_committed or resident(y) == -1
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-6)  # and the whole is right


def test_host_writes_commit_what_they_write(dev: ha.Device) -> None:
    y, want = _fresh(dev)
    ha.set_device_compute_threshold(None)  # the writes on the host (restored by device_path)
    y[3] = 7.0  # a whole overwrite of its bytes: nothing to acquire
    s = ha.stats()
    assert s.bytes_acquired == 0 and s.host_bytes_committed == PAGE_SIZE
    y[N // 2: N // 2 + 8:2] = -1.0  # leaves gaps: acquires the range it spans first
    s = ha.stats()
    assert s.bytes_acquired == 7 * 4 and s.host_bytes_committed == 2 * PAGE_SIZE
    want[3] = 7.0
    want[N // 2: N // 2 + 8:2] = -1.0
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-6)


def test_kernels_and_raw_blocks_on_a_device_born_array_commit_nothing(dev: ha.Device) -> None:
    y, want = _fresh(dev)
    out = ha.zeros(4, dtype=ha.float32, device=dev)
    ha.Program(READ, device=dev).total(1, y, out)  # y as a kernel argument
    ha.Program(BUMP, device=dev).bump(y.size, y)  # y written by a user kernel
    with hostptr.cl_buffer(y, dev, "r") as buf:  # y handed to raw pyopencl code
        assert buf.size >= y.nbytes
    assert ha.stats().host_bytes_committed == 0
    assert resident(y) in (0, -1)
    assert float(out[0]) == pytest.approx(float(want[0] + want[1]), rel=1e-6)
    np.testing.assert_allclose(np.asarray(y), want + 1, rtol=1e-6)


def test_free_buffer_acquires_everything_and_the_array_lives_on(dev: ha.Device) -> None:
    y, want = _fresh(dev)
    assert hostptr.free_buffer(y, dev)
    s = ha.stats()
    assert s.bytes_acquired == y._s.nbytes and s.host_bytes_committed == y._s.nbytes
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-6)
    ha.Program(BUMP, device=dev).bump(y.size, y)  # attached anew: a buffer of its own
    np.testing.assert_allclose(np.asarray(y), want + 1, rtol=1e-6)
    returned = pool.pool_info()["returned"]
    del y
    gc.collect()
    # not the pool's buffer any more (over the host memory itself on a mapped link): the
    # memory and that buffer just go, never into the pool
    assert pool.pool_info()["returned"] == returned


def test_a_dead_result_gives_its_pages_back_and_its_buffer_to_the_pool(dev: ha.Device) -> None:
    y, want = _fresh(dev)
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-6)
    assert resident(y) in (y.nbytes, -1)
    before = pool.pool_info()
    base = y._s.base  # (its memory stays mapped while the pool holds it)
    del y
    gc.collect()
    after = pool.pool_info()
    assert after["returned"] == before["returned"] + 1
    if _HAS_MINCORE:
        vec = (ctypes.c_ubyte * (base.nbytes // PAGE_SIZE))()
        assert _libc.mincore(ctypes.c_void_p(base.ctypes.data), ctypes.c_size_t(base.nbytes),
                             vec) == 0
        assert sum(v & 1 for v in vec) == 0  # idle in the pool: no host RAM
    del base
    z, want = _fresh(dev)  # its temporaries and result reuse idle buffers
    assert pool.pool_info()["hits"] > after["hits"]
    assert ha.stats().host_bytes_committed == 0  # a reused buffer starts uncommitted
    np.testing.assert_allclose(np.asarray(z), want, rtol=1e-6)


def test_an_escaped_numpy_view_keeps_the_memory_from_reuse(dev: ha.Device) -> None:
    y, want = _fresh(dev)
    raw = np.asarray(y)[10:20]  # a numpy view that escaped, outliving the array
    returned = pool.pool_info()["returned"]
    del y
    gc.collect()
    assert pool.pool_info()["returned"] == returned  # still reachable: not reused
    z, _ = _fresh(dev)
    del z
    np.testing.assert_allclose(raw, want[10:20], rtol=1e-6)  # never overwritten nor zeroed


def test_threads_each_read_their_own_device_born_results(dev: ha.Device) -> None:
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for _ in range(5):
                y, want = _chain(dev, N // 4)
                assert float(y[k]) == pytest.approx(float(want[k]), rel=1e-6)
                np.testing.assert_allclose(np.asarray(y[: 64 * (k + 1)]), want[: 64 * (k + 1)],
                                           rtol=1e-6)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_ten_thousand_results_keep_the_pool_and_the_registry_bounded(dev: ha.Device) -> None:
    from hostarray import _sharing

    x = device_newest(np.ones(4096, np.float32), dev)
    for _ in range(100):  # warm-up: kernels compiled, buffers in the pool
        y = x * 2.0
        float(y[0])
    del y
    info, entries = pool.pool_info(), len(_sharing._ENTRIES)
    for i in range(10_000):
        y = x * 2.0
        if i % 500 == 0:
            assert float(y[i % 4096]) == 2.0
            np.asarray(y)  # an export, dropped at once: registered, then dead
    del y
    gc.collect()
    now = pool.pool_info()
    assert now["misses"] - info["misses"] <= 2  # every result but a few reused a buffer
    assert now["idle_buffers"] <= info["idle_buffers"] + 2
    assert now["idle_bytes"] <= info["idle_bytes"] + 2 * pool.size_class(x.nbytes)
    assert len(_sharing._ENTRIES) <= entries + 20


# A, B: the machine's own OpenCL device and a second driver's (tests/reliability/_support)
_TWO_DEVICES_CODE = r"""
import gc
import numpy as np, hostarray as ha
from hostarray._compute import pool
from hostarray.bench import forced_link

ha.set_device_compute_threshold(0)
n = 1024
with forced_link(A, "copied" if A.link == "shared" else None):
    a = np.arange(n, dtype=np.float32)
    x = ha.asarray(a, device=A, copy=True)
    ha.Program("__kernel void k(__global float *x) { size_t i = get_global_id(0); x[i] += 1; }",
               device=A).k(n, x)
    y = x * 2.0                                # device-born on A: no host memory
    assert ha.stats().host_bytes_committed == 0
    yb = y.to_device(B)                        # the same memory, attached to B
    ha.Program("__kernel void k(__global float *x) { size_t i = get_global_id(0); x[i] += 1; }",
               device=B).k(n, yb)              # B reads y's newest bytes: through the host
    s = ha.stats()
    assert s.bytes_acquired >= y.nbytes and s.host_bytes_committed >= y.nbytes, s
    np.testing.assert_array_equal(np.asarray(yb), (a + 1) * 2 + 1)
    np.testing.assert_array_equal(np.asarray(y), (a + 1) * 2 + 1)  # one memory, one state
    returned = pool.pool_info()["returned"]
    del y
    gc.collect()
    assert pool.pool_info()["returned"] == returned  # yb still uses the memory: not reused
    np.testing.assert_array_equal(np.asarray(yb), (a + 1) * 2 + 1)
print("ok")
"""


def test_a_device_born_array_on_a_second_device(tmp_path: Path) -> None:
    from tests.reliability._support import TWO_DEVICES, run_python, two_devices_env

    r = run_python(TWO_DEVICES + _TWO_DEVICES_CODE, env=two_devices_env(tmp_path), timeout=300)
    assert r.returncode == 0 and r.stdout.split()[-1:] == ["ok"], \
        r.stdout[-2000:] + r.stderr[-3000:]
