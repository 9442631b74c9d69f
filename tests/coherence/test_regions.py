"""Coherence per byte range, rule by rule (docs/coherence.md, "Per byte range").

Each test counts the transfers (``ha.stats()``: publishes and acquires on every link,
and on a link where bytes move, the bytes) and checks values against a numpy model.
Run it on the machine's link and again with ``HOSTARRAY_LINK=copied``, where a missing
publish or acquire is a wrong value::

    python3 -m pytest tests/coherence/test_regions.py
    HOSTARRAY_LINK=copied python3 -m pytest tests/coherence/test_regions.py
"""

from __future__ import annotations

import gc
import json
import pickle
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hostarray as ha
from hostarray import hostptr
from hostarray._introspect import state
from tests.reliability._support import TWO_DEVICES, run_python, second_driver, two_devices_env

pytestmark = pytest.mark.device

SRC = r"""
__kernel void add(__global float *x, const float a) { x[get_global_id(0)] += a; }
__kernel void fill(__global float *x, const float a) { x[get_global_id(0)] = a; }
__kernel void addi(__global int *x, const int v) { x[get_global_id(0)] += v; }
__kernel void scale_into(__global const float *src, __global float *dst, const float a) {
    dst[get_global_id(0)] = a * src[get_global_id(0)];
}
"""
F = 4  # bytes of a float32
N = 4096  # elements of the 1-D arrays
R, C = 64, 64  # the 2-D arrays of the read tests


@pytest.fixture()
def prg(cl_device: ha.Device) -> ha.Program:
    return ha.Program(SRC, device=cl_device)


@pytest.fixture()
def unit(cl_device: ha.Device) -> int:
    """Elements per sub-buffer alignment unit: a view starting on a multiple of it can be
    a kernel argument."""
    assert cl_device.alignment % F == 0
    return cl_device.alignment // F


def moved(dev: ha.Device, publishes: tuple[int, int] = (0, 0),
          acquires: tuple[int, int] = (0, 0)) -> None:
    """The transfers since the last call are ``(count, float32 elements)`` of each kind
    (no byte moves on a shared link); the counters start again from zero."""
    s = ha.stats()
    ha.reset_stats()
    k = 0 if dev.link == "shared" else F
    got = ((s.publishes, s.bytes_published), (s.acquires, s.bytes_acquired))
    want = ((publishes[0], publishes[1] * k), (acquires[0], acquires[1] * k))
    assert got == want, f"(publishes, bytes), (acquires, bytes): {got}, expected {want}"


def device_newest(prg: ha.Program, shape: tuple[int, ...]) -> tuple[Any, np.ndarray]:
    """An array every byte of which a kernel wrote last, and its numpy model."""
    m = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = ha.asarray(m, device=prg.device, copy=True)
    prg.add(m.size, x, 1.0)
    ha.reset_stats()
    return x, m + 1


def in_sync(prg: ha.Program, shape: tuple[int, ...]) -> tuple[Any, Any, np.ndarray]:
    """An array the device and the host both hold (a kernel read it: ``y = 2 x``), ``y``
    and ``x``'s model."""
    m = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = ha.asarray(m, device=prg.device, copy=True)
    y = ha.empty(shape, dtype=ha.float32, device=prg.device)
    prg.scale_into(m.size, x, y, 2.0)
    ha.reset_stats()
    return x, y, m


def runs_outside(lo: int, hi: int, total: int) -> tuple[int, int]:
    """``(runs, elements)`` of ``[0, total)`` outside ``[lo, hi)``."""
    return (lo > 0) + (hi < total), total - (hi - lo)


# -- host reads of part of an array ----------------------------------------------------

# how the host reads a view: each returns the values it read, as numpy
READERS: dict[str, Callable[[Any], np.ndarray]] = {
    "np.asarray": lambda v: np.asarray(v).copy(),  # a raw view (an escape), dropped at once
    "np.asarray(copy=True)": lambda v: np.asarray(v, copy=True),
    "tolist": lambda v: np.asarray(v.tolist(), dtype=np.float32),
    "ha.sum": lambda v: np.asarray(float(ha.sum(v)), dtype=np.float32),
    "v + 0": lambda v: np.asarray((v + 0).tolist(), dtype=np.float32),
    "np.multiply(v, 1)": lambda v: np.asarray(np.multiply(v, 1).tolist(), dtype=np.float32),
}


def expected(how: str, mv: np.ndarray) -> np.ndarray:
    return np.asarray(mv.sum(), dtype=np.float32) if how == "ha.sum" else mv


# (view of the array, shape of the array, [lo, hi): the elements the view's bytes cover)
VIEWS: dict[str, tuple[Callable[[Any], Any], tuple[int, ...], tuple[int, int]]] = {
    "x[5:17]": (lambda a: a[5:17], (N,), (5, 17)),
    "x[:10]": (lambda a: a[:10], (N,), (0, 10)),
    "x[N-10:]": (lambda a: a[N - 10:], (N,), (N - 10, N)),
    "x[100:900][50:150]": (lambda a: a[100:900][50:150], (N,), (150, 250)),
    "x[999:99:-1]": (lambda a: a[999:99:-1], (N,), (100, 1000)),
    "X[7, :]": (lambda a: a[7, :], (R, C), (7 * C, 8 * C)),
    "X[7]": (lambda a: a[7], (R, C), (7 * C, 8 * C)),
    "X[-1]": (lambda a: a[-1], (R, C), ((R - 1) * C, R * C)),
    "X.reshape(-1)[3:9]": (lambda a: a.reshape(-1)[3:9], (R, C), (3, 9)),
    # strided: the bytes from the first element to the last, gaps included
    "X[:, 3]": (lambda a: a[:, 3], (R, C), (3, (R - 1) * C + 4)),
    "X[::-1, 5]": (lambda a: a[::-1, 5], (R, C), (5, (R - 1) * C + 6)),
    "X[2:4, 10:20]": (lambda a: a[2:4, 10:20], (R, C), (2 * C + 10, 3 * C + 20)),
    "X.T[3]": (lambda a: a.T[3], (R, C), (3, (R - 1) * C + 4)),
    "x[::4]": (lambda a: a[::4], (N,), (0, N - 3)),
    "x[10:50:7]": (lambda a: a[10:50:7], (N,), (10, 46)),
}


@pytest.mark.parametrize("how", list(READERS))
@pytest.mark.parametrize("view", list(VIEWS))
def test_reading_a_view_acquires_its_bytes_once(prg, cl_device, view: str, how: str) -> None:
    take, shape, (lo, hi) = VIEWS[view]
    read = READERS[how]
    x, m = device_newest(prg, shape)
    v = take(x)
    moved(cl_device)  # making the view reads nothing
    np.testing.assert_array_equal(read(v), expected(how, take(m)))
    moved(cl_device, acquires=(1, hi - lo))  # one run: the bytes the view covers
    np.testing.assert_array_equal(read(v), expected(how, take(m)))
    np.testing.assert_array_equal(read(take(x)), expected(how, take(m)))
    moved(cl_device)  # read again (also through a new view): nothing moves
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)
    moved(cl_device, acquires=runs_outside(lo, hi, m.size))  # only what is still stale


# a scalar read of one element: each returns a Python or numpy scalar
SCALARS: dict[str, Callable[[Any, tuple[int, ...]], Any]] = {
    "x[i]": lambda x, i: x[i],
    "float(x[i])": lambda x, i: float(x[i]),
    "x[i].item()": lambda x, i: x[i].item(),
    "x[i].tolist()": lambda x, i: x[i].tolist(),
    "int(x[i])": lambda x, i: int(x[i]),
    "x.item(i)": lambda x, i: x.item(i),
}


@pytest.mark.parametrize("how", list(SCALARS))
@pytest.mark.parametrize("shape, index", [((N,), (5,)), ((N,), (0,)), ((N,), (N - 1,)),
                                          ((N,), (-2,)), ((R, C), (7, 3)),
                                          ((R, C), (-1, -1))],
                         ids=["x[5]", "x[0]", "x[N-1]", "x[-2]", "X[7,3]", "X[-1,-1]"])
def test_reading_one_element_acquires_its_bytes_once(prg, cl_device, shape, index, how) -> None:
    x, m = device_newest(prg, shape)
    i = index if len(index) > 1 else index[0]
    flat = int(np.ravel_multi_index(tuple(k % n for k, n in zip(index, shape)), shape))
    assert SCALARS[how](x, i) == m[i]
    moved(cl_device, acquires=(1, 1))
    assert SCALARS[how](x, i) == m[i] and float(x[i]) == m[i]
    moved(cl_device)  # a second read moves nothing
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)
    moved(cl_device, acquires=runs_outside(flat, flat + 1, m.size))


@pytest.mark.parametrize("flat", [0, 5, 7 * C + 3, R * C - 1, -1, -(R * C)])
def test_item_of_a_flat_index_acquires_one_element(prg, cl_device, flat: int) -> None:
    X, m = device_newest(prg, (R, C))
    assert X.item(flat) == m.item(flat)
    moved(cl_device, acquires=(1, 1))
    assert X.item(flat) == m.item(flat)
    moved(cl_device)
    i = flat % m.size
    np.testing.assert_array_equal(np.asarray(X, copy=True), m)
    moved(cl_device, acquires=runs_outside(i, i + 1, m.size))
    with pytest.raises(IndexError):
        X.item(m.size)


def test_reads_of_several_parts_leave_one_run_per_stale_gap(prg, cl_device) -> None:
    x, m = device_newest(prg, (N,))
    assert float(x[5]) == m[5]
    assert x[10:20].tolist() == m[10:20].tolist()
    assert float(ha.sum(x[100:200])) == m[100:200].sum()
    raw = np.asarray(x[300:400])  # an escape of those bytes only
    np.testing.assert_array_equal(raw, m[300:400])
    del raw
    moved(cl_device, acquires=(4, 1 + 10 + 100 + 100))
    assert float(x[6]) == m[6]  # a neighbour of x[5]: its own bytes only
    assert x[5:20].tolist() == m[5:20].tolist()  # x[6:10] is all that is left there
    moved(cl_device, acquires=(2, 1 + 3))
    # stale: [0, 5), [20, 100), [200, 300), [400, N): one transfer each
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)
    moved(cl_device, acquires=(4, 5 + 80 + 100 + (N - 400)))
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)
    moved(cl_device)


def test_a_row_read_of_a_2d_array_leaves_other_rows_on_the_device(prg, cl_device) -> None:
    X, m = device_newest(prg, (R, C))
    assert X[7, :].tolist() == m[7].tolist()
    assert X[9].tolist() == m[9].tolist()
    moved(cl_device, acquires=(2, 2 * C))
    assert X[8, 0:2].tolist() == m[8, 0:2].tolist()  # between them: its own bytes
    moved(cl_device, acquires=(1, 2))
    assert X[7:10].tolist() == m[7:10].tolist()
    moved(cl_device, acquires=(1, C - 2))  # X[8, 2:]
    np.testing.assert_array_equal(np.asarray(X, copy=True), m)
    moved(cl_device, acquires=(2, (R - 3) * C))


# -- host writes of part of an array ------------------------------------------------------

# (write on the HostPtrArray, the same on the model, shape, [lo, hi) of the bytes written)
WRITES: dict[str, tuple[Callable[[Any], None], tuple[int, ...], tuple[int, int]]] = {
    "x[7] = 1": (lambda a: a.__setitem__(7, 1), (N,), (7, 8)),
    "x[10:20] = 5": (lambda a: a.__setitem__(slice(10, 20), 5), (N,), (10, 20)),
    "x[10:20] = array": (lambda a: a.__setitem__(slice(10, 20), np.arange(10)), (N,), (10, 20)),
    "x[10:20] += 1": (lambda a: a[10:20].__iadd__(1), (N,), (10, 20)),
    "x[-5:] = 3": (lambda a: a.__setitem__(slice(-5, None), 3), (N,), (N - 5, N)),
    "np.add(out=x[10:20])": (lambda a: np.add(a[10:20], 1, out=a[10:20]), (N,), (10, 20)),
    "X[3, :] = 2": (lambda a: a.__setitem__((3, slice(None)), 2), (R, C), (3 * C, 4 * C)),
    "X[3] *= 2": (lambda a: a[3].__imul__(2), (R, C), (3 * C, 4 * C)),
    # strided: the bytes from the first element written to the last
    "X[:, 2] = 3": (lambda a: a.__setitem__((slice(None), 2), 3), (R, C),
                    (2, (R - 1) * C + 3)),
    "x[::4] = -1": (lambda a: a.__setitem__(slice(None, None, 4), -1), (N,), (0, N - 3)),
}


@pytest.mark.parametrize("write", list(WRITES))
def test_a_host_write_publishes_only_its_part(prg, cl_device, write: str) -> None:
    do, shape, (lo, hi) = WRITES[write]
    x, y, m = in_sync(prg, shape)
    do(x)
    do(m)
    moved(cl_device)  # the host held those bytes: nothing acquired, nothing published yet
    prg.scale_into(m.size, x, y, 3.0)
    moved(cl_device, publishes=(1, hi - lo))  # only the written part, before the launch
    prg.scale_into(m.size, x, y, 3.0)
    moved(cl_device)
    np.testing.assert_array_equal(np.asarray(y, copy=True), 3 * m)
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)
    moved(cl_device, acquires=(1, m.size))  # y; x: the host held it all along


@pytest.mark.parametrize("write", list(WRITES))
def test_a_host_write_over_device_data_publishes_only_its_part(prg, cl_device,
                                                               write: str) -> None:
    do, shape, (lo, hi) = WRITES[write]
    x, m = device_newest(prg, shape)
    do(x)
    do(m)
    # a contiguous write of values known beforehand overwrites every byte it covers: no
    # acquire; one that reads what it writes, or leaves gaps (strided), acquires first
    reads_first = "+=" in write or "*=" in write or "np.add" in write or "::" in write \
        or ", 2]" in write
    moved(cl_device, acquires=(1, hi - lo) if reads_first else (0, 0))
    prg.add(m.size, x, 1.0)
    m += 1
    moved(cl_device, publishes=(1, hi - lo))
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)
    moved(cl_device, acquires=(1, m.size))


def test_a_host_write_is_published_by_the_launch_that_reads_it(prg, cl_device, unit) -> None:
    n = 16 * unit
    m = np.arange(n, dtype=np.float32)
    x = ha.asarray(m, device=cl_device, copy=True)
    prg.add(n, x, 1.0)
    m += 1
    x[unit + 1:unit + 3] = 7
    m[unit + 1:unit + 3] = 7
    ha.reset_stats()
    prg.add(4 * unit, x[8 * unit:12 * unit], 1.0)  # does not read the written bytes
    prg.fill(unit, ha.write(x[2 * unit:3 * unit]), 5.0)
    m[8 * unit:12 * unit] += 1
    m[2 * unit:3 * unit] = 5
    moved(cl_device)
    prg.add(2 * unit, x[:2 * unit], 1.0)  # reads them: published now, once
    prg.add(2 * unit, x[:2 * unit], 1.0)
    m[:2 * unit] += 2
    moved(cl_device, publishes=(1, 2))
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)
    moved(cl_device, acquires=(1, n))


def test_disjoint_host_writes_publish_one_run_each(prg, cl_device) -> None:
    x, y, m = in_sync(prg, (N,))
    for a, b in [(5, 6), (100, 200), (200, 250), (N - 1, N)]:  # [100, 250) is one run
        x[a:b] = a
        m[a:b] = a
    prg.scale_into(N, x, y, 1.0)
    moved(cl_device, publishes=(3, 1 + 150 + 1))
    np.testing.assert_array_equal(np.asarray(y, copy=True), m)


# -- kernels on views ---------------------------------------------------------------------

def _kernel_views(unit: int) -> dict[str, tuple[int, int]]:
    """Views a kernel can take: ``[lo, hi)`` in elements, ``lo`` a multiple of ``unit``."""
    n = 16 * unit
    return {"head": (0, 3 * unit), "middle": (4 * unit, 9 * unit + 5),
            "tail": (n - 2 * unit, n), "one element": (5 * unit, 5 * unit + 1)}


@pytest.mark.parametrize("where", ["head", "middle", "tail", "one element"])
def test_a_kernel_on_a_view_makes_only_its_bytes_device_newest(prg, cl_device, unit,
                                                               where: str) -> None:
    n = 16 * unit
    lo, hi = _kernel_views(unit)[where]
    m = np.arange(n, dtype=np.float32)
    x = ha.asarray(m, device=cl_device, copy=True)
    prg.add(hi - lo, x[lo:hi], 1.0)
    m[lo:hi] += 1
    moved(cl_device, publishes=(1, hi - lo))  # the view's bytes only
    assert x[:lo].tolist() == m[:lo].tolist()
    assert x[hi:].tolist() == m[hi:].tolist()
    assert float(ha.sum(x[:lo])) == m[:lo].sum()
    assert ha.stats().waits == 0  # nor a wait for the kernel
    moved(cl_device)  # the rest: read on the host, no transfer
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)
    moved(cl_device, acquires=(1, hi - lo))
    prg.add(hi - lo, x[lo:hi], 1.0)  # the device still holds the view's bytes
    m[lo:hi] += 1
    moved(cl_device)
    prg.add(n, x, 1.0)  # the whole array: the device lacks the rest
    m += 1
    moved(cl_device, publishes=runs_outside(lo, hi, n))
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)
    moved(cl_device, acquires=(1, n))


def test_a_kernel_on_rows_of_a_2d_array(prg, cl_device, unit) -> None:
    rows, cols = 16, unit  # every row starts on a unit
    m = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    X = ha.asarray(m, device=cl_device, copy=True)
    prg.add(3 * cols, X[4:7], 10.0)
    m[4:7] += 10
    moved(cl_device, publishes=(1, 3 * cols))
    assert X[3].tolist() == m[3].tolist() and X[7:].tolist() == m[7:].tolist()
    assert X[:, 0][:4].tolist() == m[:4, 0].tolist()  # a strided view of host rows
    moved(cl_device)
    assert X[5, 1:3].tolist() == m[5, 1:3].tolist()
    moved(cl_device, acquires=(1, 2))
    assert X[:5, 2].tolist() == m[:5, 2].tolist()  # covers X[4, :3] of the kernel's rows
    moved(cl_device, acquires=(1, 3))
    np.testing.assert_array_equal(np.asarray(X, copy=True), m)
    moved(cl_device, acquires=(2, (cols - 2) + (2 * cols - 3)))  # X[4:7] but those five


def test_a_kernel_on_a_view_of_a_view(prg, cl_device, unit) -> None:
    n = 16 * unit
    m = np.arange(n, dtype=np.float32)
    x = ha.asarray(m, device=cl_device, copy=True)
    inner = x[2 * unit:12 * unit][4 * unit:6 * unit]  # x[6u:8u]
    prg.fill(2 * unit, inner, 7.0)
    m[6 * unit:8 * unit] = 7
    moved(cl_device, publishes=(1, 2 * unit))  # fill reads (not const): published first
    assert x[6 * unit - 1].tolist() == m[6 * unit - 1] and float(x[8 * unit]) == m[8 * unit]
    moved(cl_device)
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)
    moved(cl_device, acquires=(1, 2 * unit))


# -- escapes ------------------------------------------------------------------------------

def test_a_raw_view_of_part_acquires_only_its_bytes(prg, cl_device) -> None:
    x, m = device_newest(prg, (N,))
    raw = np.asarray(x[100:200])
    moved(cl_device, acquires=(1, 100))
    np.testing.assert_array_equal(raw, m[100:200])
    assert x._s.escaped
    raw2 = np.asarray(x[150:250])  # overlapping: only what the host still lacks
    moved(cl_device, acquires=(1, 50))
    prg.add(N, x, 1.0)  # publishes and acquires what the raw views cover: one run each
    m += 1
    moved(cl_device, publishes=(1, 150), acquires=(1, 150))
    col = np.asarray(x.reshape(R, C)[:, 3])  # strided: the bytes from first to last
    moved(cl_device, acquires=(2, (100 - 3) + ((R - 1) * C + 4 - 250)))
    np.testing.assert_array_equal(col, m.reshape(R, C)[:, 3])
    np.testing.assert_array_equal(raw2, m[150:250])
    del raw, raw2, col
    gc.collect()
    assert not x._s.escaped


def test_while_a_raw_view_lives_launches_publish_before_and_acquire_after(
        prg, cl_device) -> None:
    x, m = device_newest(prg, (N,))
    y = ha.zeros(N, dtype=ha.float32, device=cl_device)
    raw = np.asarray(x[100:200])
    moved(cl_device, acquires=(1, 100))
    raw[:] = -1  # behind hostarray's back
    m[100:200] = -1
    prg.add(N, x, 1.0)
    m += 1
    # before: the raw view's bytes (the device holds the rest); after: the raw view's
    # bytes, so that it sees the kernel's write without asking
    moved(cl_device, publishes=(1, 100), acquires=(1, 100))
    np.testing.assert_array_equal(raw, m[100:200])
    raw[5] = 50  # writes through it reach the next kernel
    m[105] = 50
    prg.scale_into(N, x, y, 2.0)  # only reads x
    moved(cl_device, publishes=(2, 100 + N))  # y: first use; x: the raw view's bytes
    assert float(y[105]) == 100.0
    np.testing.assert_array_equal(np.asarray(y, copy=True), 2 * m)
    ha.reset_stats()
    prg.add(N, x, 1.0)
    m += 1
    moved(cl_device, publishes=(1, 100), acquires=(1, 100))
    view_of_raw = raw[10:20]  # a numpy view of the export keeps it escaped
    del raw
    gc.collect()
    assert x._s.escaped
    view_of_raw[0] = 9
    m[110] = 9
    prg.add(N, x, 1.0)
    m += 1
    moved(cl_device, publishes=(1, 100), acquires=(1, 100))
    assert view_of_raw[0] == 10.0
    del view_of_raw
    gc.collect()
    assert not x._s.escaped
    prg.add(N, x, 1.0)  # laziness returns: the last raw writes published once...
    prg.add(N, x, 1.0)
    m += 2
    moved(cl_device, publishes=(1, 100))  # ...and nothing acquired
    assert float(x[110]) == m[110]
    moved(cl_device, acquires=(1, 1))
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)
    moved(cl_device, acquires=(2, N - 1))


def test_a_launch_away_from_a_raw_view_stays_lazy(prg, cl_device, unit) -> None:
    n = 16 * unit
    m = np.arange(n, dtype=np.float32)
    x = ha.asarray(m, device=cl_device, copy=True)
    prg.add(n, x, 1.0)
    m += 1
    raw = np.asarray(x[:unit])
    moved(cl_device, publishes=(1, n), acquires=(1, unit))
    prg.add(4 * unit, x[8 * unit:12 * unit], 1.0)  # bytes no raw view can reach
    m[8 * unit:12 * unit] += 1
    moved(cl_device)  # nothing to publish, nothing the raw view must see
    raw[0] = 42
    m[0] = 42
    prg.add(2 * unit, x[:2 * unit], 1.0)  # overlaps the raw view: publish, acquire
    m[:2 * unit] += 1
    moved(cl_device, publishes=(1, unit), acquires=(1, unit))
    np.testing.assert_array_equal(raw, m[:unit])
    del raw
    gc.collect()
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)
    moved(cl_device, acquires=(1, n - unit))


# -- whole-array work keeps one transfer per contiguous run ----------------------------------

@pytest.mark.parametrize("pieces", [2, 4])
@pytest.mark.parametrize("order", ["forward", "backward"])
def test_kernels_over_adjacent_views_then_one_transfer(prg, cl_device, unit, pieces: int,
                                                       order: str) -> None:
    n = 16 * unit
    step = n // pieces
    m = np.arange(n, dtype=np.float32)
    x = ha.asarray(m, device=cl_device, copy=True)
    starts = list(range(0, n, step))
    for lo in starts if order == "forward" else starts[::-1]:
        prg.add(step, x[lo:lo + step], 1.0)
    m += 1
    moved(cl_device, publishes=(pieces, n))  # one per view
    assert len(state(x).segments) == 1  # one segment again
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)
    moved(cl_device, acquires=(1, n))  # one run
    prg.add(n, x, 1.0)  # the device holds it all: nothing to publish
    m += 1
    moved(cl_device)
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)
    moved(cl_device, acquires=(1, n))


def test_a_whole_kernel_after_partial_reads_is_one_run_again(prg, cl_device) -> None:
    x, m = device_newest(prg, (N,))
    assert float(x[5]) == m[5] and x[100:200].tolist() == m[100:200].tolist()
    moved(cl_device, acquires=(2, 101))
    prg.add(N, x, 1.0)  # the device is current everywhere: nothing published
    m += 1
    moved(cl_device)
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)
    moved(cl_device, acquires=(1, N))


def test_a_whole_host_write_is_one_publish(prg, cl_device) -> None:
    x, m = device_newest(prg, (N,))
    assert float(x[5]) == m[5]
    x[10:20] = 3  # the device holds the rest newest...
    x[...] = 2  # ...until the host overwrites it all: nothing acquired
    m[...] = 2
    moved(cl_device, acquires=(1, 1))
    prg.add(N, x, 1.0)
    m += 1
    moved(cl_device, publishes=(1, N))
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)
    moved(cl_device, acquires=(1, N))


# -- write-only kernels ---------------------------------------------------------------------

@pytest.mark.parametrize("where", ["head", "middle", "tail", "one element"])
def test_a_write_only_kernel_on_a_view_publishes_nothing(prg, cl_device, unit,
                                                         where: str) -> None:
    n = 16 * unit
    lo, hi = _kernel_views(unit)[where]
    m = np.arange(n, dtype=np.float32)
    x = ha.asarray(m, device=cl_device, copy=True)
    x[lo:hi] = -5  # host writes the kernel overwrites
    prg.fill(hi - lo, ha.write(x[lo:hi]), 3.0)
    m[lo:hi] = 3
    moved(cl_device)  # nothing published: not the view, nor the rest
    assert x[:lo].tolist() == m[:lo].tolist() and x[hi:].tolist() == m[hi:].tolist()
    moved(cl_device)
    assert x[lo:hi].tolist() == m[lo:hi].tolist()
    moved(cl_device, acquires=(1, hi - lo))
    prg.add(n, x, 1.0)  # now the whole array: the device lacks all but the view
    m += 1
    moved(cl_device, publishes=runs_outside(lo, hi, n))
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)
    moved(cl_device, acquires=(1, n))


def test_a_write_only_kernel_over_device_data(prg, cl_device, unit) -> None:
    n = 16 * unit
    m = np.arange(n, dtype=np.float32)
    x = ha.asarray(m, device=cl_device, copy=True)
    prg.add(n, x, 1.0)
    m += 1
    x[unit:unit + 3] = 9  # a host write into the range the next kernel overwrites...
    x[3 * unit] = 9  # ...and one outside it
    m[3 * unit] = 9
    moved(cl_device, publishes=(1, n))
    prg.fill(2 * unit, ha.write(x[:2 * unit]), 4.0)
    m[:2 * unit] = 4
    moved(cl_device)
    prg.add(n, x, 1.0)  # reads x[3u]: the host's write, published; x[u:u+3] is dead
    m += 1
    moved(cl_device, publishes=(1, 1))
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)
    moved(cl_device, acquires=(1, n))


def test_a_write_only_kernel_on_2d_rows(prg, cl_device, unit) -> None:
    rows, cols = 8, unit
    m = np.zeros((rows, cols), dtype=np.float32)
    X = ha.zeros((rows, cols), dtype=ha.float32, device=cl_device)
    prg.fill(2 * cols, ha.write(X[2:4]), 1.0)
    prg.fill(2 * cols, ha.write(X[4:6]), 2.0)
    m[2:4], m[4:6] = 1, 2
    moved(cl_device)
    assert X[1].tolist() == m[1].tolist() and X[6:].tolist() == m[6:].tolist()
    moved(cl_device)
    np.testing.assert_array_equal(np.asarray(X, copy=True), m)
    moved(cl_device, acquires=(1, 4 * cols))  # X[2:6]: two launches, one run


# -- two devices ------------------------------------------------------------------------------

TWO_DEVICES_CODE = r"""
import json
import numpy as np, hostarray as ha
from hostarray.backends import opencl as ocl

# A, B: the machine's own OpenCL device and the test-only second driver's (TWO_DEVICES)
src = "__kernel void add(__global float *x, const float a) { x[get_global_id(0)] += a; }"
pa, pb = ha.Program(src, device=A), ha.Program(src, device=B)
N = 4096
h = N // 2
assert h * 4 % A.alignment == 0 and h * 4 % B.alignment == 0, (A.alignment, B.alignment)

log = []
plain = ocl.OpenCLBuffer.acquire
def logged(self, lo=0, hi=None):
    log.append((self, lo, hi))
    return plain(self, lo, hi)
ocl.OpenCLBuffer.acquire = logged

def step(name, **got):
    s = ha.stats()
    ha.reset_stats()
    by_id = {id(b): str(k) for k, b in x._s.buffers.items()}
    got.update(publishes=s.publishes, acquires=s.acquires, bytes_published=s.bytes_published,
               bytes_acquired=s.bytes_acquired,
               from_=[[by_id[id(b)], lo, hi] for b, lo, hi in log])
    log.clear()
    print(json.dumps([name, got]))

m = np.arange(N, dtype=np.float32)
x = ha.asarray(m, device=A, copy=True)
xb = x.to_device(B)
assert xb._s is x._s, "to_device copied"
ha.reset_stats()
pa.add(h, x[:h], 1.0)        # A writes the first half
pb.add(N - h, xb[h:], 2.0)   # B writes the second half
m[:h] += 1
m[h:] += 2
step("launches", A=str(A), B=str(B), link=A.link)
first = np.asarray(x[:h], copy=True)
step("first half", ok=bool(np.array_equal(first, m[:h])))
second = np.asarray(x[h:], copy=True)   # through A's array: B holds it
step("second half", ok=bool(np.array_equal(second, m[h:])))
whole = np.asarray(xb, copy=True)
step("whole", ok=bool(np.array_equal(whole, m)))
pa.add(h, x[h:], 10.0)       # now A writes the second half
m[h:] += 10
step("A on the second half")
ok = bool(float(xb[N - 1]) == m[N - 1] and float(x[0]) == m[0])
step("one element of each half", ok=ok)
"""


@pytest.mark.parametrize("link", ["auto", "copied"])
@pytest.mark.link_fixed
def test_halves_written_on_two_devices_are_acquired_from_each(tmp_path: Path,
                                                              link: str) -> None:
    r = run_python(TWO_DEVICES + TWO_DEVICES_CODE,
                   env={**two_devices_env(tmp_path), "HOSTARRAY_LINK": link}, timeout=300)
    assert r.returncode == 0, f"second device: {second_driver()}\n" + r.stdout[-2000:] \
        + r.stderr[-2000:]
    steps = dict(json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("["))
    a, b = steps["launches"]["A"], steps["launches"]["B"]
    assert a != b, steps["launches"]
    k = 0 if steps["launches"]["link"] == "shared" else 4
    h = 2048
    s = steps["launches"]
    assert (s["publishes"], s["acquires"], s["bytes_published"]) == (2, 0, 2 * h * k), s
    for name, dev, lo, hi in [("first half", a, 0, h), ("second half", b, h, 2 * h)]:
        s = steps[name]
        assert s["ok"], (name, s)
        assert s["from_"] == [[dev, lo * 4, hi * 4]], (name, s)
        assert (s["publishes"], s["acquires"], s["bytes_acquired"]) == (0, 1, h * k), s
    s = steps["whole"]
    assert s["ok"] and (s["publishes"], s["acquires"], s["from_"]) == (0, 0, []), s
    s = steps["A on the second half"]  # A lacks it (B wrote it); the host has it
    assert (s["publishes"], s["acquires"], s["bytes_published"]) == (1, 0, h * k), s
    s = steps["one element of each half"]  # the second half from A now; the first: host
    assert s["ok"] and s["from_"] == [[a, 4 * (2 * h - 1), 4 * 2 * h]], s
    assert (s["publishes"], s["acquires"], s["bytes_acquired"]) == (0, 1, k), s


# -- a 1-D array a kernel wrote last (the tests below) ---------------------------------------------

def device_newest_1d(prg: ha.Program, dev: ha.Device, n: int) -> tuple[ha.HostPtrArray, np.ndarray]:
    """An array whose newest bytes are all on the device (a kernel wrote them, nobody
    looked), and its numpy model."""
    x = ha.asarray(np.arange(n, dtype=np.float32), device=dev)
    m = np.arange(n, dtype=np.float32)
    prg.add(n, x, 1.0)
    m += 1
    return x, m


# -- a host write into a view that raises part-way -------------------------------------------------

def _str_cast(a: Any, u: int) -> None:
    a[u:u + 4] = np.array(["1", "2", "x", "4"])  # numpy parses "1", "2", then raises


def _copyto_str(a: Any, u: int) -> None:
    np.copyto(a[u:u + 4], np.array(["1", "2", "x", "4"]), casting="unsafe")


def _overflow_cast(a: Any, u: int) -> None:
    with np.errstate(over="raise"):  # numpy casts every element, then raises
        a[u:u + 4] = np.array([1.0, 2.0, 1e300, 4.0])


def _ufunc_divide(a: Any, u: int) -> None:
    with np.errstate(divide="raise"):  # the ufunc writes out=, then raises
        np.divide(np.ones(4, np.float32), np.array([1, 0, 1, 1], np.float32), out=a[u:u + 4])


def _ufunc_warning_error(a: Any, u: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's RuntimeWarning, after the write
        np.log(np.array([1, -1, 1, 1], np.float32), out=a[u:u + 4])


def _scalar_overflow(a: Any, u: int) -> None:
    with np.errstate(over="raise"):  # the scalar is converted first: nothing is written
        a[u:u + 4] = 1e300


@pytest.mark.parametrize("write", [_str_cast, _copyto_str, _overflow_cast, _ufunc_divide,
                                   _ufunc_warning_error, _scalar_overflow],
                         ids=["str_cast", "copyto_str", "overflow_cast", "ufunc_divide",
                              "ufunc_warning_error", "scalar_overflow"])
def test_view_write_that_raises_part_way_keeps_what_numpy_wrote(prg, cl_device, unit,
                                                                 write) -> None:
    """A write into a contiguous view skips the acquire of its stale device bytes (a whole
    overwrite).  numpy may raise after writing some or all elements (a string that does
    not parse, a floating-point error made an exception): on a copied link the device's
    old bytes then won and numpy's writes were lost, while the shared link kept them."""
    u = unit
    x, m = device_newest_1d(prg, cl_device, 4 * u)
    with pytest.raises(Exception) as got:
        write(x, u)
    with pytest.raises(got.type):
        write(m, u)
    np.testing.assert_array_equal(np.array(x, copy=True), m)
    prg.add(4 * u, x, 1.0)  # the device sees the same bytes
    np.testing.assert_array_equal(np.array(x, copy=True), m + 1)


def test_int_view_write_with_invalid_cast_raised_keeps_numpy_writes(prg, cl_device,
                                                                     unit) -> None:
    y = ha.asarray(np.arange(4 * unit, dtype=np.int32), device=cl_device)
    n = np.arange(4 * unit, dtype=np.int32)
    prg.addi(4 * unit, y, 1)
    n += 1
    v = np.array([1.0, np.nan, 3.0, 4.0])
    for a in (y, n):
        with pytest.raises(FloatingPointError), np.errstate(invalid="raise"):
            a[unit:unit + 4] = v
    np.testing.assert_array_equal(np.array(y, copy=True), n)


def test_whole_view_overwrite_still_skips_the_acquire(prg, cl_device, unit) -> None:
    """The fix must keep the optimisation where nothing can raise late."""
    x, m = device_newest_1d(prg, cl_device, 4 * unit)
    ha.reset_stats()
    x[unit:2 * unit] = 5.0
    x[2 * unit:3 * unit] = np.full(unit, 6.0, np.float32)
    np.add(np.ones(unit, np.float32), 1, out=x[3 * unit:])
    assert ha.stats().acquires == 0
    m[unit:2 * unit], m[2 * unit:3 * unit], m[3 * unit:] = 5, 6, 2
    np.testing.assert_array_equal(np.array(x, copy=True), m)


def test_code_numpy_runs_during_a_view_write_reads_what_numpy_wrote(prg, cl_device, unit,
                                                                    monkeypatch) -> None:
    """numpy reports a floating-point warning after writing ``out=``; a replaced
    ``warnings.showwarning`` (logging.captureWarnings, an application's hook) that reads
    the array being written acquired the view's stale device bytes over what numpy had
    just written (copied link: the old 34.0 where numpy wrote nan, for the reader and
    for good)."""
    u = unit
    x, m = device_newest_1d(prg, cl_device, 4 * u)
    seen: list[float] = []

    def show(*args: Any, **kwargs: Any) -> None:
        seen.append(float(x[u + 1]))

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        monkeypatch.setattr(warnings, "showwarning", show)
        np.log(np.array([1, -1, 1, 1], np.float32), out=x[u:u + 4])
    with np.errstate(invalid="ignore"):
        np.log(np.array([1, -1, 1, 1], np.float32), out=m[u:u + 4])
    assert len(seen) == 1 and np.isnan(seen[0])
    np.testing.assert_array_equal(np.array(x, copy=True), m)


# -- raw views escape only their own range ---------------------------------------------------------

def test_raw_view_of_one_part_costs_nothing_to_launches_on_another(prg, cl_device,
                                                                   unit) -> None:
    """A raw view of x[:u] made every launch on x[2u:3u] acquire its range after (and wait
    for the kernel), as if the whole array had escaped."""
    u = unit
    x, m = device_newest_1d(prg, cl_device, 4 * u)
    prg.add(u, x[2 * u:3 * u], 1.0)
    m[2 * u:3 * u] += 1
    raw = np.asarray(x[:u])
    ha.reset_stats()
    for _ in range(3):
        prg.add(u, x[2 * u:3 * u], 1.0)
        m[2 * u:3 * u] += 1
    s = ha.stats()
    assert (s.publishes, s.acquires, s.waits) == (0, 0, 0)
    raw[0] = -1.0  # the raw view still works both ways
    m[0] = -1.0
    prg.add(4 * u, x, 1.0)
    m += 1
    np.testing.assert_array_equal(raw, m[:u])
    del raw
    np.testing.assert_array_equal(np.array(x, copy=True), m)


def test_raw_view_sees_a_launch_on_an_overlapping_part(prg, cl_device, unit) -> None:
    """...while a launch that touches the raw view's bytes still publishes them before and
    acquires them after (only the overlap)."""
    u = unit
    x, m = device_newest_1d(prg, cl_device, 4 * u)
    raw = np.asarray(x[u - 2:u + 2])  # the last two elements of unit 0, the first two of 1
    raw[:] = 7.0
    m[u - 2:u + 2] = 7.0
    ha.reset_stats()
    prg.add(u, x[u:2 * u], 1.0)  # overlaps raw[2:]
    m[u:2 * u] += 1
    np.testing.assert_array_equal(raw, m[u - 2:u + 2])  # no host access needed to see it
    s = ha.stats()
    assert (s.publishes, s.acquires) == (1, 1)
    if cl_device.link == "copied":  # only the overlap moved, each way
        assert (s.bytes_published, s.bytes_acquired) == (8, 8)
    raw[3] = 3.0
    m[u + 1] = 3.0
    prg.add(u, x[u:2 * u], 1.0)
    m[u:2 * u] += 1
    np.testing.assert_array_equal(raw, m[u - 2:u + 2])
    del raw
    np.testing.assert_array_equal(np.array(x, copy=True), m)


# -- pickling a view with out-of-band buffers ------------------------------------------------------

def test_pickle_out_of_band_buffer_of_a_view_is_not_a_hidden_raw_view(prg, cl_device,
                                                                       unit) -> None:
    """Protocol 5 hands numpy's ``PickleBuffer`` to ``buffer_callback``: it was a raw
    pointer into x's memory that no escape recorded, and unpickling made a second storage
    over the same bytes.  A kernel writing x afterwards was seen by the unpickled array on
    the shared link and not on the copied one; now it is a copy of the view when pickled,
    on every link, as an in-band pickle is."""
    u = unit
    x, m = device_newest_1d(prg, cl_device, 4 * u)
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(x[u:2 * u], protocol=5, buffer_callback=buffers.append)
    at_dump = m[u:2 * u].copy()
    prg.add(4 * u, x, 1.0)
    m += 1
    y = pickle.loads(data, buffers=buffers)
    assert y.device == cl_device
    assert not np.shares_memory(np.asarray(y), np.asarray(x))
    np.testing.assert_array_equal(np.array(y, copy=True), at_dump)
    np.testing.assert_array_equal(np.array(x, copy=True), m)
    # the buffers the callback kept are y's memory: writes through them reach y's kernels
    held = np.frombuffer(buffers[0], dtype=np.float32)
    held[0] = -5.0
    prg.add(u, y, 1.0)
    assert float(y[0]) == -4.0
    assert held[0] == -4.0
    del held, buffers
    gc.collect()
    prg.add(u, y, 1.0)
    assert float(y[0]) == -3.0


# -- a raw cl_buffer block and a launch on an overlapping view -------------------------------------

def test_launch_overlapping_an_open_cl_buffer_block_is_refused(prg, cl_device, unit) -> None:
    """The launch retired (released) the sub-buffer the open block still used: the block's
    next command then went through a released memory object (on PoCL's copied link it
    landed in the launch's new sub-buffer: x[u:3u] got the fill meant for x[:2u]).  Now
    the launch is refused before anything moves, and the block keeps its buffer."""
    import pyopencl as cl

    u = unit
    x = ha.zeros(4 * u, dtype=ha.float32, device=cl_device)
    m = np.zeros(4 * u, np.float32)
    with hostptr.cl_buffer(x[:2 * u], cl_device, "rw") as buf:
        before = ha.stats()
        with pytest.raises(ha.errors.BadLaunch):
            prg.add(2 * u, x[u:3 * u], 1.0)
        assert ha.stats() == before
        prg.add(u, x[2 * u:3 * u], 1.0)  # a part the block's sub-buffer does not reach
        m[2 * u:3 * u] += 1
        cl.enqueue_fill_buffer(hostptr.queue(cl_device), buf, np.float32(4.0), 0, 8 * u)
        m[:2 * u] = 4.0
    np.testing.assert_array_equal(np.array(x, copy=True), m)
    prg.add(2 * u, x[u:3 * u], 1.0)  # once the block is over, the launch runs
    m[u:3 * u] += 1
    np.testing.assert_array_equal(np.array(x, copy=True), m)


def test_cl_buffer_blocks_on_overlapping_views(cl_device, unit) -> None:
    """The same for a second cl_buffer block; blocks on the same units share one."""
    import pyopencl as cl

    u = unit
    x = ha.zeros(4 * u, dtype=ha.float32, device=cl_device)
    q = hostptr.queue(cl_device)
    with hostptr.cl_buffer(x[:2 * u], cl_device, "w") as a:
        with pytest.raises(ha.errors.BadLaunch):
            with hostptr.cl_buffer(x[u:3 * u], cl_device, "w"):
                pass
        with hostptr.cl_buffer(x[:2 * u - 3], cl_device, "r") as b:
            assert b.int_ptr == a.int_ptr
        cl.enqueue_fill_buffer(q, a, np.float32(2.0), 0, 8 * u)
    with hostptr.cl_buffer(x[u:3 * u], cl_device, "rw") as c:
        cl.enqueue_fill_buffer(q, c, np.float32(3.0), 0, 8 * u)
    np.testing.assert_array_equal(np.array(x, copy=True),
                                  np.repeat(np.float32([2, 3, 3, 0]), u))


def test_failed_write_only_cl_buffer_block_invalidates_only_its_bytes(prg, cl_device,
                                                                      unit) -> None:
    """A "w" block on x[:u] that raised dropped the device's copy of the whole array: the
    next launch on x[3u:] published bytes the device already held."""
    u = unit
    x, m = device_newest_1d(prg, cl_device, 4 * u)
    np.array(x, copy=True)  # host and device hold the same bytes everywhere
    x[:u] = 5.0  # the device's copy of x[:u] is stale: the block's buffer holds nothing
    m[:u] = 5.0
    with pytest.raises(RuntimeError), hostptr.cl_buffer(x[:u], cl_device, "w"):
        raise RuntimeError("raw code failed")
    ha.reset_stats()
    prg.add(u, x[3 * u:], 1.0)
    m[3 * u:] += 1
    assert ha.stats().publishes == 0
    prg.add(4 * u, x, 1.0)  # x[:u] is published again: the host's 5.0 counts
    m += 1
    np.testing.assert_array_equal(np.array(x, copy=True), m)


@pytest.mark.parametrize("access", ["w", "rw"])
@pytest.mark.parametrize("relaunch", [False, True], ids=["freed", "freed_and_relaunched"])
def test_free_buffer_inside_a_cl_buffer_block_loses_nothing(prg, cl_device, unit, access,
                                                            relaunch) -> None:
    """Freeing the buffer while a cl_buffer block used it left the block's exit recording
    its writes on a device that had no buffer any more: the next host read failed with
    ``AssertionError: coherence: no side holds the newest data`` (for good)."""
    import pyopencl as cl

    u = unit
    x, m = device_newest_1d(prg, cl_device, 4 * u)
    with hostptr.cl_buffer(x[u:2 * u], cl_device, access) as buf:
        assert hostptr.free_buffer(x, cl_device)
        if relaunch:  # a new buffer, and a launch on another part, during the block
            prg.add(u, x[3 * u:], 1.0)
            m[3 * u:] += 1
        cl.enqueue_fill_buffer(hostptr.queue(cl_device), buf, np.float32(9.0), 0, 4 * u)
        m[u:2 * u] = 9.0
    np.testing.assert_array_equal(np.array(x, copy=True), m)
    prg.add(4 * u, x, 1.0)
    m += 1
    np.testing.assert_array_equal(np.array(x, copy=True), m)


def test_free_buffer_racing_cl_buffer_blocks_from_another_thread(prg, cl_device,
                                                                  unit) -> None:
    """The same race from another thread (free_buffer and a launch on another part, while
    one thread's blocks fill x[:u] and read it back): the reads raised AssertionError on
    the shared link and returned garbage on the copied one."""
    import pyopencl as cl

    u = unit
    x = ha.zeros(4 * u, dtype=ha.float32, device=cl_device)
    rounds = 200
    errors: list[BaseException] = []
    seen: list[tuple[int, float]] = []

    def blocks() -> None:
        try:
            for r in range(rounds):
                with hostptr.cl_buffer(x[:u], cl_device, "w") as buf:
                    cl.enqueue_fill_buffer(hostptr.queue(cl_device), buf, np.float32(r), 0,
                                           4 * u)
                seen.append((r, float(x[3])))
        except BaseException as e:
            errors.append(e)

    def frees() -> None:
        try:
            for _ in range(rounds):
                hostptr.free_buffer(x, cl_device)
                prg.add(u, x[2 * u:3 * u], 1.0)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=blocks), threading.Thread(target=frees)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "deadlock"
    if errors:
        raise errors[0]
    assert seen == [(r, float(r)) for r in range(rounds)]
    m = np.zeros(4 * u, np.float32)
    m[:u] = rounds - 1
    m[2 * u:3 * u] = rounds
    np.testing.assert_array_equal(np.array(x, copy=True), m)


# -- explicit publish and acquire of a view --------------------------------------------------------

def test_explicit_publish_and_acquire_of_a_view_move_only_its_bytes(prg, cl_device,
                                                                    unit) -> None:
    """``acquire_device_writes(x[:u])`` acquired every stale byte of x, and
    ``publish_host_writes(x[:u])`` published all of x (on a copied link, the whole array
    each way for one unit)."""
    u = unit
    x, m = device_newest_1d(prg, cl_device, 16 * u)
    ha.reset_stats()
    hostptr.acquire_device_writes(x[:u], cl_device)
    s = ha.stats()
    assert s.acquires == 1
    if cl_device.link == "copied":
        assert s.bytes_acquired == 4 * u
    np.testing.assert_array_equal(np.asarray(x[:u]), m[:u])  # nothing more to acquire
    assert ha.stats().acquires == 1
    x[:u] = 3.0
    m[:u] = 3.0
    ha.reset_stats()
    hostptr.publish_host_writes(x[u // 2:u + 2], cl_device)  # reaches device-newest bytes
    s = ha.stats()
    assert (s.publishes, s.acquires) == (1, 1)  # x[u:u + 2] acquired first: newest wins
    if cl_device.link == "copied":
        assert (s.bytes_published, s.bytes_acquired) == (4 * (u // 2 + 2), 8)
    ha.reset_stats()
    prg.add(16 * u, x, 1.0)  # only x[:u // 2] is still to publish
    m += 1
    assert ha.stats().publishes == 1
    if cl_device.link == "copied":
        assert ha.stats().bytes_published == 4 * (u // 2)
    np.testing.assert_array_equal(np.array(x, copy=True), m)


# -- a raw view that dies in the middle of a launch ------------------------------------------------

def test_raw_views_see_the_launch_when_another_dies_mid_launch(prg, cl_device, unit) -> None:
    """A raw view in a reference cycle dies when the collector runs, at any allocation:
    also inside a launch on the same array, whose thread already holds the storage's
    (re-entrant) lock.  Its end then changed the coherence state under the launch: it
    removed an entry of the list of escapes the launch was looping over, so a live raw
    view's range was skipped and, on a copied link, not acquired (the live view missed
    the kernel's result).  Here the last reference to such a view is dropped at each
    Python call the launch makes in turn (a profile hook), as the collector could."""
    n = 16 * unit
    x = ha.asarray(np.arange(n, dtype=np.float32), device=cl_device)
    m = np.arange(n, dtype=np.float32)

    def launch_dropping(dying: list[Any], at: int) -> int:
        calls = 0

        def hook(frame: Any, event: str, arg: Any) -> None:
            nonlocal calls
            if event == "call":
                calls += 1
                if calls == at:
                    dying.clear()  # the raw views' finalizers run here, inside the launch

        sys.setprofile(hook)
        try:
            prg.add(n, x, 1.0)
        finally:
            sys.setprofile(None)
        return calls

    total = 0
    at = 0
    while at <= total:  # every call of the launch (counted with the raw views alive)
        at += 1
        dying: list[Any] = []
        live: list[tuple[int, np.ndarray]] = []
        for j in range(6):  # dying and live raw views, alternating in the escapes
            a = (8 * j + 37 * at) % (n - 8)
            if j % 2:
                live.append((a, np.asarray(x[a:a + 8])))
                live[-1][1][:] = at
                m[a:a + 8] = at
            else:
                dying.append(np.asarray(x[a:a + 8]))
        total = max(total, launch_dropping(dying, at))
        m += 1
        for a, raw in live:
            np.testing.assert_array_equal(raw, m[a:a + 8], err_msg=f"call {at}, x[{a}:]")
        del live
    np.testing.assert_array_equal(np.array(x, copy=True), m)
