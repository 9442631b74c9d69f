"""Value semantics of element reads and of the functions that return views.

* An integer for every axis (``x[i]``, ``m[i, j]``, numpy integers, 0-d integer arrays)
  gives a 0-d array over memory of its own, as numpy's scalar and array-api-strict's 0-d
  array: accumulators, swaps and shuffles leave ``x`` alone.  On device-newest data only
  the element's bytes are acquired.  ``x[i, ...]`` is the element's view.
* Iterating a 1-D array yields such 0-d arrays (array-api-strict, CuPy, PyTorch).
* Every function that returns a view (``unstack``, ``broadcast_arrays``, ``meshgrid``,
  ``matrix_transpose``, ``expand_dims``, ``squeeze``, ``moveaxis``, ``flip``, ``reshape``,
  ``permute_dims``, indexing) gives arrays over the input's own bytes: on kernel-written
  data they read what the kernel wrote, and the device path computes on those bytes
  (``unstack`` of a 1-D array built its pieces from numpy scalars: garbage, and a device
  path reading outside the allocation).

See docs/coherence.md ("What an index returns").
"""

from __future__ import annotations

import copy
import heapq
import os
import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hostarray as ha

pytestmark = pytest.mark.device

FILL = ("__kernel void fill(__global float *x) "
        "{ size_t i = get_global_id(0); x[i] = (float)i + 1.5f; }")
TWICE = ("__kernel void twice(__global float *x) "
         "{ size_t i = get_global_id(0); x[i] = 2 * x[i] + 1; }")
_TWICE: dict[ha.Device, ha.Program] = {}
ADD = "__kernel void add(__global float *x, const float v) { x[get_global_id(0)] += v; }"


def kernel_changed(a: np.ndarray, dev: ha.Device) -> tuple[ha.HostPtrArray, np.ndarray]:
    """``a`` (float32) on ``dev``, then changed by a kernel (``2 * a + 1``): the host's
    bytes are stale off a shared link, and differ from the newest ones; and the model."""
    x = ha.asarray(a, device=dev, copy=True)
    prg = _TWICE.get(dev)
    if prg is None:
        prg = _TWICE[dev] = ha.Program(TWICE, device=dev)
    prg.twice((x.size,), x)
    return x, 2 * a + 1


@pytest.fixture(scope="module")
def fill(cl_device):
    return ha.Program(FILL, device=cl_device)


@pytest.fixture
def forced(off_shared):
    """The device path at every size, on a link where it is taken (copied where the
    device's own link is shared)."""
    old = ha.set_device_compute_threshold(0)
    try:
        yield off_shared
    finally:
        ha.set_device_compute_threshold(old)


# -- 1. views built outside the indexing path ---------------------------------------------

def test_unstack_of_a_1d_array_a_kernel_wrote(cl_device, fill) -> None:
    x = ha.empty((6,), dtype=ha.float32, device=cl_device)
    fill.fill((6,), ha.write(x))
    assert [float(v) for v in ha.unstack(x)] == [1.5, 2.5, 3.5, 4.5, 5.5, 6.5]


def test_flip_of_a_0d_view_is_a_view_over_the_kernels_bytes(cl_device, fill) -> None:
    # numpy flips a 0-d array by indexing it with (): a scalar copy, which made a view
    # over other memory (an internal error on kernel-written data, a copy on the host's)
    x = ha.empty((6,), dtype=ha.float32, device=cl_device)
    fill.fill((6,), ha.write(x))
    for p in (ha.flip(x[2, ...]), ha.flip(ha.unstack(x)[2])):
        assert float(p) == 3.5 and np.shares_memory(np.asarray(p), np.asarray(x))
    f = ha.flip(x[4, ...])
    f += 1  # a view: the write reaches x
    assert float(x[4]) == 6.5


def test_unstack_pieces_are_views_of_the_input(cl_device, fill) -> None:
    x = ha.empty((4,), dtype=ha.float32, device=cl_device)
    fill.fill((4,), ha.write(x))
    pieces = ha.unstack(x)
    assert all(p.shape == () for p in pieces)
    assert np.shares_memory(np.asarray(pieces[2]), np.asarray(x))
    pieces[2][...] = 40.0  # a view: the write reaches x
    assert x.tolist() == [1.5, 2.5, 40.0, 4.5]


def _view_functions(x: ha.HostPtrArray,
                    a: np.ndarray) -> list[tuple[str, ha.HostPtrArray, np.ndarray]]:
    """Each view-returning function on ``x``, beside numpy's answer on ``a`` (x's model)."""
    pieces = ha.unstack(x)
    out: list[tuple[str, ha.HostPtrArray, np.ndarray]] = []
    for i, p in enumerate(pieces):
        out.append((f"unstack[{i}]", p, a[i]))
    if x.ndim >= 2:
        for i, p in enumerate(ha.unstack(x, axis=1)):
            out.append((f"unstack1[{i}]", p, a[:, i]))
        out.append(("matrix_transpose", ha.matrix_transpose(x), np.swapaxes(a, -1, -2)))
        out.append(("mT", x.mT, np.swapaxes(a, -1, -2)))
    for name, got, want in (("expand_dims", ha.expand_dims(x, axis=0), a[None]),
                            ("flip", ha.flip(x), np.flip(a)),
                            ("reshape", ha.reshape(x, (-1,)), a.reshape(-1)),
                            ("permute_dims", ha.permute_dims(x, tuple(range(x.ndim))[::-1]),
                             np.transpose(a)),
                            ("moveaxis", ha.moveaxis(x, 0, -1), np.moveaxis(a, 0, -1)),
                            ("squeeze", ha.squeeze(ha.expand_dims(x, axis=0), axis=0), a),
                            ("slice", x[::2], a[::2]),
                            ("ellipsis element", x[(0,) * x.ndim + (...,)], a[(0,) * a.ndim]),
                            ("flip of a 0-d view", ha.flip(x[(0,) * x.ndim + (...,)]),
                             a[(0,) * a.ndim])):
        out.append((name, got, want))
    b = ha.broadcast_arrays(x, ha.asarray(np.zeros((2,) + x.shape, x.dtype), device=x.device))
    out.append(("broadcast_arrays", b[0], np.broadcast_to(a, (2,) + a.shape)))
    if x.ndim == 1:
        g = ha.meshgrid(x, x)
        for k, w in enumerate(np.meshgrid(a, a)):
            out.append((f"meshgrid[{k}]", g[k], w))
    return out


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # (state-free fixture)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
       seed=st.integers(0, 2**16))
def test_every_view_reads_what_the_kernel_wrote_on_the_device_path(forced, shape, seed) -> None:
    # the device path forced (threshold 0): each view, as an operand of a device where,
    # gives numpy's answer, and so does its host read
    rng = np.random.default_rng(seed)
    dev = forced
    x, model = kernel_changed(rng.standard_normal(shape).astype(np.float32), dev)
    for name, got, want in _view_functions(x, model):
        m = ha.asarray(rng.random(want.shape) < 0.5, device=dev)
        r = ha.where(m, ha.asarray(42.0, dtype=ha.float32, device=dev), got)
        np.testing.assert_array_equal(np.asarray(r), np.where(np.asarray(m), 42.0, want),
                                      err_msg=name)
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=name)


def test_an_unstack_piece_and_the_element_compute_alike(forced) -> None:
    dev = forced
    before = ha.stats().device_ops
    x, model = kernel_changed(np.arange(5, dtype=np.float32), dev)
    m = ha.asarray(False, device=dev)
    for i, p in enumerate(ha.unstack(x)):
        assert bool(ha.where(m, 42, p) == ha.where(m, 42, x[i]))
        assert float(p) == float(x[i]) == model[i]
    assert ha.stats().device_ops > before  # the device path was taken


VIEWS_UNDER_MALLOC_CHECK = textwrap.dedent("""
    import numpy as np, hostarray as ha
    from tests.array.test_value_semantics import _view_functions, kernel_changed
    dev = [d for d in ha.devices() if d.framework == "opencl"][0]
    ha.set_device_compute_threshold(0)
    rng = np.random.default_rng(7)
    for trial in range(40):
        shape = tuple(int(n) for n in rng.integers(1, 5, size=int(rng.integers(1, 4))))
        x, model = kernel_changed(rng.standard_normal(shape).astype(np.float32), dev)
        for name, got, want in _view_functions(x, model):
            m = ha.asarray(rng.random(want.shape) < 0.5, device=dev)
            r = ha.where(m, 42.0, got) + ha.sum(got)
            want_r = np.where(np.asarray(m), 42.0, want) + want.sum(dtype=np.float32)
            np.testing.assert_allclose(np.asarray(r), want_r, rtol=1e-5, atol=1e-4,
                                       err_msg=name)
    print("ok")
""")


def test_view_functions_on_the_device_path_under_a_memory_checker(cl_device) -> None:
    # glibc's checking allocator: a read or write outside an allocation aborts at the fault
    # (the unstack bug corrupted the heap and crashed later, elsewhere)
    # the repository first (``tests`` is imported by name), then what the caller had there
    path = os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, MALLOC_CHECK_="3", MALLOC_PERTURB_="165", PYTHONPATH=path)
    r = subprocess.run([sys.executable, "-c", VIEWS_UNDER_MALLOC_CHECK], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]


# -- 2. an integer for every axis gives a copy ---------------------------------------------

def _kernel_written(cl_device, fill, n=8) -> ha.HostPtrArray:
    x = ha.empty((n,), dtype=ha.float32, device=cl_device)
    fill.fill((n,), ha.write(x))
    return x


def test_an_accumulator_leaves_the_array_alone(cl_device, fill) -> None:
    x = _kernel_written(cl_device, fill, 5)
    model = np.arange(5, dtype=np.float32) + 1.5
    acc = x[0]
    for i in range(1, 5):
        acc += x[i]
    assert float(acc) == model.sum()
    np.testing.assert_array_equal(np.asarray(x), model)


def test_swap_shuffle_sort_and_heapq_keep_every_element(cl_device, fill) -> None:
    x = _kernel_written(cl_device, fill, 8)
    model = np.arange(8, dtype=np.float32) + 1.5
    x[0], x[1] = x[1], x[0]
    model[0], model[1] = model[1], model[0]
    np.testing.assert_array_equal(np.asarray(x), model)
    random.Random(3).shuffle(x)
    assert sorted(np.asarray(x).tolist()) == sorted(model.tolist())  # nothing lost
    assert [float(v) for v in sorted(x)] == sorted(model.tolist())
    assert [float(v) for v in list(x)] == np.asarray(x).tolist()
    y = ha.asarray(np.asarray(x) * 2, device=cl_device)
    assert [(float(a), float(b)) for a, b in zip(x, y)] == \
        list(zip(np.asarray(x).tolist(), (np.asarray(x) * 2).tolist()))
    h = list(x)
    heapq.heapify(h)
    assert [float(heapq.heappop(h)) for _ in range(8)] == sorted(model.tolist())
    assert sorted(np.asarray(x).tolist()) == sorted(model.tolist())


@pytest.mark.parametrize("key", [3, -1, np.int64(2), np.uint8(1)])
def test_an_integer_index_is_a_copy_that_reads_one_element(cl_device, fill, key) -> None:
    x = _kernel_written(cl_device, fill, 1 << 12)
    ha.reset_stats()
    e = x[key]
    assert e.shape == () and e.device == x.device
    assert ha.stats().bytes_acquired <= 4  # the element's bytes at most (copied link)
    assert float(e) == float(np.arange(1 << 12)[key]) + 1.5
    before = float(x[key])
    e[...] = -1.0
    e += 10
    assert float(x[key]) == before
    assert not np.shares_memory(np.asarray(e), np.asarray(x))


def test_a_full_rank_tuple_key_is_a_copy_and_a_slice_stays_a_view(cl_device) -> None:
    m = ha.asarray(np.arange(12.0).reshape(3, 4), device=cl_device)
    e = m[1, 2]
    e += 100
    assert float(m[1, 2]) == 6.0
    row = m[1]
    row += 100  # a view: a row, not an element
    assert m[1].tolist() == [104.0, 105.0, 106.0, 107.0]
    v = m[1, 2, ...]
    v += 1  # the element's view
    assert float(m[1, 2]) == 107.0
    z = ha.asarray(np.float64(3.0))
    c = z[()]  # a 0-d array's () key: numpy's scalar, a copy here too
    c += 1
    assert float(z) == 3.0


def test_copy_module_and_integer_reads_on_device_newest_data(forced) -> None:
    dev = forced
    x, model = kernel_changed(np.arange(6, dtype=np.float32), dev)
    e = copy.copy(x[2])
    assert float(e) == model[2]
    assert float(x[2] + x[3]) == model[2] + model[3]  # device path on two element copies


# -- 6. iteration -----------------------------------------------------------------------

def test_iterating_a_1d_array_yields_0d_arrays(cl_device, fill) -> None:
    a, b = ha.asarray([1.0, 2.0])
    assert type(a) is ha.HostPtrArray and a.shape == () and float(b) == 2.0
    assert a.__array_namespace__() is ha
    x = _kernel_written(cl_device, fill, 4)
    items = list(x)
    assert all(type(v) is ha.HostPtrArray and v.shape == () and v.device == x.device
               for v in items)
    assert [float(v) for v in items] == [1.5, 2.5, 3.5, 4.5]
    items[0] += 10
    assert float(x[0]) == 1.5
    rows = list(ha.asarray(np.arange(6.0).reshape(2, 3)))
    assert rows[1].tolist() == [3.0, 4.0, 5.0]


# -- 9. divmod and round ---------------------------------------------------------------

@pytest.mark.parametrize("a", [np.array([7, -7, 0, 5]), np.array([7.5, -7.25, 0.0, 2.0])])
def test_divmod_as_numpy(a) -> None:
    x = ha.asarray(a)
    for got, want in zip(divmod(x, 4), divmod(a, 4)):
        np.testing.assert_array_equal(np.asarray(got), want)
    for got, want in zip(divmod(9, ha.asarray(a[a != 0])), divmod(9, a[a != 0])):
        np.testing.assert_array_equal(np.asarray(got), want)


def test_round_with_and_without_ndigits() -> None:
    # a 0-d array rounds as numpy's scalar does (x[i] is a 0-d array here, a scalar there)
    assert float(round(ha.asarray(2.567), 2)) == float(round(np.float64(2.567), 2))
    assert type(round(ha.asarray(2.567), 2)) is ha.HostPtrArray
    for v in (0.5, 1.5, 2.5, -0.5, 7.0):
        r = round(ha.asarray(v))
        assert type(r) is int and r == round(np.float64(v))
    x = ha.asarray([1.234, 5.678])
    assert range(round(ha.asarray([3.0])[0])) == range(3)
    with pytest.raises(OverflowError):
        round(ha.asarray(np.inf))
    with pytest.raises(ValueError):
        round(ha.asarray(np.nan))
    with pytest.raises(TypeError, match="ha.round"):
        round(x)  # numpy's arrays raise TypeError too
    assert round(x[1], 1).tolist() == 5.7
