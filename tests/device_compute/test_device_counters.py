"""The placement rule of the device compute path, read off the transfer counters.

A kernel makes ``x`` device-newest; then ``y = x * 2 + 1; z = ha.exp(y)`` moves no byte and
counts three ``device_ops``, and reading ``z`` acquires exactly ``z.nbytes``.  Below the
threshold, with host-newest big operands, or with the path off, the host path runs (and
acquires ``x``); a small host-newest operand is published for a device operation.  The
result pool reuses a dead result's memory, never while a numpy view of it lives.

These tests need the copied link (``HOSTARRAY_LINK=copied``: every byte moved is counted);
on a shared link the device path never runs by design, which
``test_shared_link_keeps_the_host_path`` checks in a subprocess.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import hostarray as ha
from hostarray._compute import PUBLISH_LIMIT
from hostarray._introspect import state
from tests._device_helpers import f32_newest, newest_on

ROOT = Path(__file__).resolve().parents[2]
MIB = 1 << 20
N = MIB // 4  # float32 elements in 1 MiB
_TOUCH = "__kernel void touch(__global float *x) { int i = get_global_id(0); x[i] = x[i]; }"


@pytest.fixture
def dev(off_shared: ha.Device) -> Iterator[ha.Device]:
    """The OpenCL device off a shared link (copied where its own link is shared; mapped: a
    GPU), with the default 1 MiB threshold set explicitly (and restored), so no
    environment setting changes what is tested."""
    old = ha.set_device_compute_threshold(MIB)
    try:
        yield off_shared
    finally:
        ha.set_device_compute_threshold(old)


def _newest(x: ha.HostPtrArray) -> ha.HostPtrArray:
    """A no-op read-write kernel over x: its newest bytes are on the device afterwards."""
    ha.Program(_TOUCH, device=x.device).touch((x.size,), x)
    assert state(x).host_stale
    return x


def _on(dev: ha.Device, a: np.ndarray, newest: bool = True) -> ha.HostPtrArray:
    # a copy nobody else holds: memory a caller's numpy array shares is kept host-current
    x = ha.asarray(a.copy(), device=dev)
    return _newest(x) if newest else x


def _data(n: int, shape: tuple[int, ...] | None = None) -> np.ndarray:
    a = np.linspace(-1, 1, n, dtype=np.float32)
    return a.reshape(shape) if shape else a


def _address(r: ha.HostPtrArray) -> int:
    return int(r._s.base.ctypes.data)


@pytest.mark.device
def test_device_newest_chain_moves_nothing_until_read(dev: ha.Device) -> None:
    xn = _data(N)
    x = _on(dev, xn)
    ha.reset_stats()
    y = x * 2 + 1
    z = ha.exp(y)
    s = ha.stats()
    assert (s.bytes_acquired, s.acquires, s.bytes_published) == (0, 0, 0), s
    assert (s.device_ops, s.host_fallbacks) == (3, 0), s
    assert z.device == dev and state(z).host_stale
    ha.reset_stats()
    got = np.asarray(z)
    s = ha.stats()
    assert s.bytes_acquired == z.nbytes and s.device_ops == 0, s
    np.testing.assert_allclose(got, np.exp(xn * 2 + 1), rtol=1e-6)


@pytest.mark.device
@pytest.mark.parametrize("n,on_device", [(N, True), (N - 1, False), (1000, False)])
def test_threshold_picks_the_path(dev: ha.Device, n: int, on_device: bool) -> None:
    # 1 MiB (the default threshold) runs on the device; one element less keeps the host
    # path, which acquires x to compute with numpy
    xn = _data(n)
    x = _on(dev, xn)
    ha.reset_stats()
    y = x * 2 + 1
    s = ha.stats()
    assert s.device_ops == (2 if on_device else 0), s
    assert s.bytes_acquired == (0 if on_device else x.nbytes), s
    assert y.device == dev
    np.testing.assert_allclose(np.asarray(y), xn * 2 + 1, rtol=1e-6)


@pytest.mark.device
def test_host_newest_big_operands_keep_the_host_path(dev: ha.Device) -> None:
    shape = (2, N // 2 + 1)  # just over PUBLISH_LIMIT: too big to publish for a device op
    x = _on(dev, _data(2 * (N // 2 + 1), shape))
    w = _on(dev, _data(2 * (N // 2 + 1), shape)[::-1].copy(), newest=False)
    assert w.nbytes > PUBLISH_LIMIT
    ha.reset_stats()
    r = x + w
    s = ha.stats()
    assert (s.device_ops, s.bytes_published) == (0, 0), s
    assert s.bytes_acquired == x.nbytes, s
    ha.reset_stats()
    _ = w * w  # no operand is newer on the device: numpy on the host, nothing moves
    s = ha.stats()
    assert (s.device_ops, s.bytes_acquired, s.bytes_published) == (0, 0, 0), s
    np.testing.assert_allclose(np.asarray(r), np.asarray(x) + np.asarray(w))


@pytest.mark.device
def test_small_host_newest_operand_is_published(dev: ha.Device) -> None:
    xn, bn = _data(N, (256, N // 256)), _data(N // 256)[::-1].copy()
    x = _on(dev, xn)
    b = _on(dev, bn, newest=False)
    ha.reset_stats()
    r = x + b
    s = ha.stats()
    assert (s.device_ops, s.bytes_acquired) == (1, 0), s
    assert s.bytes_published == b.nbytes, s
    np.testing.assert_array_equal(np.asarray(r), xn + bn)


@pytest.mark.device
def test_threshold_none_turns_the_device_path_off(dev: ha.Device) -> None:
    x = _on(dev, _data(N))
    assert ha.set_device_compute_threshold(None) == MIB
    assert ha.device_compute_threshold() is None
    ha.reset_stats()
    _ = x * 2
    s = ha.stats()
    assert (s.device_ops, s.bytes_acquired) == (0, x.nbytes), s


def _dead_result(x: ha.HostPtrArray) -> int:
    """Compute ``x * 2``, read it (the host waits for the queue, so the finished launch
    lets go of the result's storage), let it die; its host address."""
    r = x * 2
    assert float(r[0]) == pytest.approx(-2.0)
    where = _address(r)
    del r
    gc.collect()
    return where


@pytest.mark.device
def test_a_dead_results_memory_is_reused(dev: ha.Device) -> None:
    x = _on(dev, _data(N))
    where = _dead_result(x)
    r2 = x * 3
    assert _address(r2) == where
    np.testing.assert_allclose(np.asarray(r2), _data(N) * 3, rtol=1e-6)


@pytest.mark.device
def test_a_never_read_dead_result_is_reused_by_the_next_result(dev: ha.Device) -> None:
    # a launch does not keep the pooled storages it uses alive (their memory stays in the
    # pool; the queue is in order): the memory is free again as soon as the result dies
    x = _on(dev, _data(N))
    r = x * 2
    where = _address(r)
    del r
    gc.collect()
    assert _address(x * 3) == where


@pytest.mark.device
def test_memory_is_not_reused_while_a_numpy_view_lives(dev: ha.Device) -> None:
    x = _on(dev, _data(N))
    r = x * 2
    where = _address(r)
    view = np.asarray(r)
    del r
    gc.collect()
    r2 = x * 3
    assert _address(r2) != where
    np.testing.assert_allclose(view, _data(N) * 2, rtol=1e-6)  # not overwritten by r2
    del view, r2
    where = _dead_result(x)  # the same steps without a view: reused
    assert _address(x * 4) == where


@pytest.mark.device
def test_clear_pool_returns_the_bytes_freed(dev: ha.Device) -> None:
    x = _on(dev, _data(N))
    ha.clear_pool()
    _dead_result(x)
    assert ha.clear_pool() == MIB  # one idle 1 MiB storage (whole pages already)
    assert ha.clear_pool() == 0


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ)
    full["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), full.get("PYTHONPATH")]))
    full.pop("HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES", None)
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=full,
                          capture_output=True, text=True, timeout=120)


_PRINT_THRESHOLD = "import hostarray as ha; print(ha.device_compute_threshold())"


@pytest.mark.parametrize("value,want", [(None, str(MIB)), ("off", "None"), ("OFF", "None"),
                                        ("0", "0"), ("4096", "4096")])
def test_threshold_from_the_environment(value: str | None, want: str) -> None:
    env = {} if value is None else {"HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES": value}
    r = _python(_PRINT_THRESHOLD, **env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == want


@pytest.mark.parametrize("value", ["lots", "-1", "1.5"])
def test_a_bad_threshold_in_the_environment_fails_the_import(value: str) -> None:
    r = _python(_PRINT_THRESHOLD, HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES=value)
    assert r.returncode != 0
    assert "ValueError: HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES=" in r.stderr, r.stderr


_SHARED_RUN = f"""
import numpy as np, hostarray as ha
dev = [d for d in ha.devices() if d.framework == "opencl"][0]
assert dev.link == "shared", dev.link
ha.set_device_compute_threshold(0)
x = ha.asarray(np.ones(1024, np.float32), device=dev)
ha.Program({_TOUCH!r}, device=dev).touch((1024,), x)
ha.reset_stats()
y = ha.exp(x * 2)
print(ha.stats().device_ops, float(np.asarray(y)[0]))
"""


@pytest.mark.device
@pytest.mark.link_fixed
def test_shared_link_keeps_the_host_path(cl_device: ha.Device) -> None:
    # on a shared link the host reads the device's bytes without a copy: numpy's turn
    r = _python(_SHARED_RUN, HOSTARRAY_LINK="shared")
    assert r.returncode == 0, r.stderr
    ops, value = r.stdout.split()
    assert ops == "0"
    assert float(value) == pytest.approx(np.exp(2.0))


# -- the placement rule at its edges: results over the threshold, small host operands --------------

@pytest.mark.device
def test_broadcast_result_over_threshold_runs_on_device(dev: ha.Device) -> None:
    # the placement rule: "the largest array involved, an operand or the result, has at least
    # device_compute_threshold() bytes" -- an outer sum whose result is 4 MiB of device-newest
    # 4 KiB operands runs on the host instead, acquiring the operands
    ha.set_device_compute_threshold(MIB)
    a = f32_newest(dev, np.arange(1024))
    ha.reset_stats()
    o = a[:, None] + a[None, :]
    assert o.nbytes == 4 * MIB
    s = ha.stats()
    assert (s.device_ops, s.acquires) == (1, 0)


@pytest.fixture
def every_size(dev: ha.Device) -> Iterator[None]:
    """``dev`` with the device path taken at every size (threshold 0, restored after)."""
    old = ha.set_device_compute_threshold(0)
    try:
        yield
    finally:
        ha.set_device_compute_threshold(old)


@pytest.mark.device
@pytest.mark.usefixtures("every_size")
def test_small_strided_host_operand_publishes_at_most_the_publish_limit(dev: ha.Device) -> None:
    # "newest on the host and at most 1 MiB each: those are published": a 16-element (64-byte)
    # host-newest strided view of a 16 MiB array passes as small, and the device path then
    # publishes its whole first-to-last span, 15 MiB, where the host path would have acquired
    # the 64 bytes of x
    big = ha.asarray(np.arange(4 * MIB, dtype=np.float32), device=dev, copy=True)  # host-newest
    col = big[:: (4 * MIB) // 16]
    assert col.nbytes == 64
    x = f32_newest(dev, np.arange(16))
    ha.reset_stats()
    y = x + col
    s = ha.stats()
    np.testing.assert_array_equal(np.asarray(y), np.arange(16, dtype=np.float32) + np.asarray(col))
    assert s.bytes_published <= MIB, s


@pytest.mark.device
def test_set_threshold_takes_numpy_integers() -> None:
    old = ha.set_device_compute_threshold(np.int64(4096))
    try:
        assert ha.device_compute_threshold() == 4096
    finally:
        ha.set_device_compute_threshold(old)


K = 1 << 17          # 512 KiB of float32/int32


@pytest.fixture
def one_mib() -> Iterator[None]:
    old = ha.set_device_compute_threshold(1 << 20)
    try:
        yield
    finally:
        ha.set_device_compute_threshold(old)


def _counts(fn):
    ha.reset_stats()
    r = fn()
    s = ha.stats()
    return r, s


@pytest.mark.device
@pytest.mark.parametrize("case", ["broadcast", "true_divide", "where", "cumulative_sum"])
def test_result_over_threshold_runs_on_the_device(off_shared, one_mib, case) -> None:
    dev = off_shared
    if case == "broadcast":       # (K,) float32 + (4, 1) float32 -> (4, K) float32: 2 MiB
        a = newest_on(dev, np.ones(K), "float32")
        b = newest_on(dev, np.ones((4, 1)), "float32")
        def fn():
            return a + b
    elif case == "true_divide":   # int32 / 2 -> float64: 1 MiB
        a = newest_on(dev, np.ones(K), "int32")
        def fn():
            return a / 2
    elif case == "where":         # where((4, 1), (K,), 0.0) -> (4, K) float32: 2 MiB
        a = newest_on(dev, np.ones(K), "float32")
        c = newest_on(dev, np.ones((4, 1)), "bool")
        def fn():
            return ha.where(c, a, 0.0)
    else:                         # cumulative_sum(int32, dtype=int64): 1 MiB
        a = newest_on(dev, np.ones(K), "int32")
        def fn():
            return ha.cumulative_sum(a, dtype=ha.int64)
    _, s = _counts(fn)
    assert s.device_ops == 1 and s.acquires == 0, s


# -- device_ops counts operations: one ha.where with broadcasting operands is one ------------------

@pytest.mark.device
def test_where_with_broadcasting_is_one_device_op(off_shared, device_path) -> None:
    dev = off_shared
    c = newest_on(dev, [[True], [False]], "bool")
    x = newest_on(dev, [1.0, 2.0, 3.0], "float32")
    y = newest_on(dev, [[9.0], [8.0]], "float32")
    ha.reset_stats()
    r = ha.where(c, x, y)
    s = ha.stats()
    assert s.device_ops == 1 and s.launches == 0, s  # a pending expression (issue 23)
    assert np.array_equal(np.asarray(r), np.where([[True], [False]], [1, 2, 3], [[9], [8]]))
    assert ha.stats().launches == 1  # its one kernel, run when the host looked
