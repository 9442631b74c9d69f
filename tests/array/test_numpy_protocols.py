"""numpy's protocols on HostPtrArray: ``__array__``, ``__array_ufunc__``,
``__array_function__``, pickling, copies and the Python conveniences, each
compared with the same call on numpy arrays."""

from __future__ import annotations

import copy
import gc
import os
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hostarray as ha
from hostarray import _interop

FEW = settings(max_examples=int(os.environ.get("HOSTARRAY_HYPOTHESIS_EXAMPLES", "25")),
               deadline=None)

floats = hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=5),
                    elements=st.floats(-1e3, 1e3, allow_nan=False))


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def assert_same(got, want) -> None:
    """``got`` is what hostarray returned, ``want`` numpy's answer: same values, arrays
    as HostPtrArrays, scalars as the same scalar type, or (a reduction numpy spells for a
    namespace function: docs/device-compute.md's results rule) a 0-d HostPtrArray of the
    scalar's data type."""
    if isinstance(want, np.ndarray):
        assert isinstance(got, ha.HostPtrArray), type(got)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), want)
    elif isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
    elif isinstance(want, np.generic):
        if isinstance(got, ha.HostPtrArray):
            assert got.shape == () and got.dtype == want.dtype, (got, want)
            np.testing.assert_array_equal(np.asarray(got), want)
        else:
            assert type(got) is type(want)
            np.testing.assert_array_equal(got, want)
    else:
        assert got == want or (got != got and want != want)


# -- __array__ ---------------------------------------------------------------------------------

def test_asarray_shares_memory_and_copy_rules() -> None:
    a = np.arange(12.0).reshape(3, 4)
    x = ha.asarray(a)
    v = np.asarray(x)
    assert _address(v) == _address(a) and v.base is not None
    assert np.shares_memory(np.array(x, copy=False), a)
    assert not np.shares_memory(np.array(x), a)  # np.array copies by default
    assert np.asarray(x, dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError, match="needs a copy"):
        np.asarray(x, dtype=np.float32, copy=False)
    np.testing.assert_array_equal(np.asarray(x, dtype=np.int64), a.astype(np.int64))


def test_asarray_allocates_nothing_at_64_mib() -> None:
    import tracemalloc

    x = ha.zeros(8 * 2**20)  # 64 MiB
    tracemalloc.start()
    try:
        v = np.asarray(x)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert v.nbytes == 64 * 2**20
    assert peak < 64 * 2**10  # bookkeeping only: no copy of the data
    assert ha.stats().bytes_moved == 0


def test_asarray_is_an_escape_while_the_view_lives() -> None:
    x = ha.zeros(8)
    v = np.asarray(x)
    w = v[2:]  # numpy collapses bases: the view keeps the export's holder alive
    del v
    gc.collect()
    assert x._s.escaped
    w[0] = 5.0
    assert float(np.asarray(x, copy=True)[2]) == 5.0
    del w
    gc.collect()
    assert not x._s.escaped


# -- __array_ufunc__ ---------------------------------------------------------------------------

UNARY = [np.negative, np.absolute, np.sin, np.exp, np.sqrt, np.floor, np.square, np.isfinite,
         np.sign, np.log1p, np.rint, np.signbit]
BINARY = [np.add, np.subtract, np.multiply, np.divide, np.maximum, np.minimum, np.hypot,
          np.arctan2, np.greater, np.equal, np.logical_and, np.copysign, np.fmod]


@FEW
@given(a=floats, f=st.sampled_from(UNARY))
def test_unary_ufuncs_match_numpy(a, f) -> None:
    with np.errstate(all="ignore"):
        assert_same(f(ha.asarray(a)), f(a))


@FEW
@given(data=st.data(), f=st.sampled_from(BINARY))
def test_binary_ufuncs_broadcast_like_numpy(data, f) -> None:
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4))
    a, b = (data.draw(hnp.arrays(np.float64, s, elements=st.floats(-100, 100)))
            for s in shapes.input_shapes)
    with np.errstate(all="ignore"):
        want = f(a, b)
        assert_same(f(ha.asarray(a), ha.asarray(b)), want)
        assert_same(f(ha.asarray(a), b), want)  # mixed with numpy
        assert_same(f(a, ha.asarray(b)), want)
        assert_same(f(ha.asarray(a), 2.5), f(a, 2.5))


@FEW
@given(a=floats, f=st.sampled_from([np.add, np.multiply, np.maximum, np.minimum]),
       axis=st.integers(-1, 0))
@np.errstate(over="ignore")
def test_ufunc_methods_match_numpy(a, f, axis) -> None:
    x = ha.asarray(a)
    assert_same(f.reduce(x, axis=axis), f.reduce(a, axis=axis))
    assert_same(f.reduce(x, axis=None), f.reduce(a, axis=None))
    assert_same(f.accumulate(x, axis=axis), f.accumulate(a, axis=axis))
    idx = [0, max(0, a.shape[axis] - 1)]
    assert_same(f.reduceat(x, idx, axis=axis), f.reduceat(a, idx, axis=axis))
    assert_same(f.outer(x[..., :2], x[..., :3]), f.outer(a[..., :2], a[..., :3]))
    y, b = copy.copy(x), a.copy()
    f.at(y, ([0],), 7.0)
    f.at(b, ([0],), 7.0)
    np.testing.assert_array_equal(np.asarray(y), b)


def test_ufunc_out_and_where_take_hostptrarrays() -> None:
    a = np.arange(10.0)
    x = ha.asarray(a)
    out = ha.zeros(10)
    r = np.multiply(x, 3, out=out, where=ha.asarray(a > 4))
    assert r is out
    np.testing.assert_array_equal(np.asarray(out), np.where(a > 4, a * 3, 0))
    q, rem = ha.zeros(10), ha.zeros(10)
    r2 = np.divmod(x, 4, out=(q, rem))
    assert r2[0] is q and r2[1] is rem
    np.testing.assert_array_equal(np.asarray(q), a // 4)
    np.testing.assert_array_equal(np.asarray(rem), a % 4)
    before = np.array(x)
    np.add(x, 1, out=x)  # in place through a ufunc
    np.testing.assert_array_equal(np.asarray(x), before + 1)
    plain = np.zeros(10)
    assert np.add(x, 1, out=plain) is plain  # a numpy out is returned as numpy returns it


def test_ufunc_with_numpy_array_on_the_left_returns_hostptrarray() -> None:
    a = np.arange(4.0)
    r = a + ha.asarray(a)
    assert isinstance(r, ha.HostPtrArray)
    np.testing.assert_array_equal(np.asarray(r), a + a)


def test_zero_d_ufunc_gives_numpy_scalar_like_numpy() -> None:
    want = np.sin(np.asarray(0.5))
    got = np.sin(ha.asarray(0.5))
    assert type(got) is type(want)  # a ufunc called on 0-d operands: numpy's own rule
    assert_same(got, want)


# -- __array_function__ ------------------------------------------------------------------------

A = np.array([[3.0, 1.0, 2.0], [0.5, -4.0, 8.0], [1.0, 1.0, 7.0]])
FUNCTIONS = {
    "concatenate": lambda a, b: np.concatenate([a, b], axis=1),
    "concatenate_none": lambda a, b: np.concatenate([a, b], axis=None),
    "stack": lambda a, b: np.stack([a, b], axis=-1),
    "where3": lambda a, b: np.where(np.greater(a, 1), a, b),
    "where1": lambda a, b: np.where(np.greater(a, 1)),
    "mean": lambda a, b: np.mean(a),
    "mean_axis": lambda a, b: np.mean(a, axis=0),
    "norm": lambda a, b: np.linalg.norm(a),
    "norm_axis": lambda a, b: np.linalg.norm(a, axis=1),
    "quantile": lambda a, b: np.quantile(a, [0.25, 0.5]),
    "median": lambda a, b: np.median(a, axis=1),
    "sort": lambda a, b: np.sort(a),
    "sort_none": lambda a, b: np.sort(a, axis=None),
    "argsort": lambda a, b: np.argsort(a, axis=0),
    "cumsum": lambda a, b: np.cumsum(a),
    "unique": lambda a, b: np.unique(a, return_counts=True),
    "unique_all": lambda a, b: np.unique_all(a),
    "histogram": lambda a, b: np.histogram(a, bins=3),
    "split": lambda a, b: np.split(a, 3),
    "reshape": lambda a, b: np.reshape(a, (9,)),
    "transpose": lambda a, b: np.transpose(a),
    "diff": lambda a, b: np.diff(a, axis=0),
    "clip": lambda a, b: np.clip(a, 0, 2),
    "dot": lambda a, b: np.dot(a, b),
    "einsum": lambda a, b: np.einsum("ij,jk->ik", a, b),
    "solve": lambda a, b: np.linalg.solve(a, b),
    "svd": lambda a, b: np.linalg.svd(a),
    "inv": lambda a, b: np.linalg.inv(a),
    "tensordot": lambda a, b: np.tensordot(a, b, axes=1),
    "argmax": lambda a, b: np.argmax(a),
    "nonzero": lambda a, b: np.nonzero(np.greater(a, 1)),
    "meshgrid": lambda a, b: np.meshgrid(a[0], b[0]),
    "broadcast_arrays": lambda a, b: np.broadcast_arrays(a[:1], b),
    "allclose": lambda a, b: np.allclose(a, b),
    "array_equal": lambda a, b: np.array_equal(a, a),
    "count_nonzero": lambda a, b: np.count_nonzero(np.greater(a, 1)),
    "shape": lambda a, b: np.shape(a),
    "isclose": lambda a, b: np.isclose(a, b),
    "expand_dims": lambda a, b: np.expand_dims(a, 0),
    "flip": lambda a, b: np.flip(a, 1),
    "pad": lambda a, b: np.pad(a, 1),
    "cov": lambda a, b: np.cov(a),
    "average": lambda a, b: np.average(a, axis=0, weights=b[0]),
    "interp": lambda a, b: np.interp(a, [0.0, 5.0], [1.0, 2.0]),
    "trace": lambda a, b: np.trace(a),
    "percentile": lambda a, b: np.percentile(a, 90, axis=0),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_numpy_functions_match_numpy(name) -> None:
    f = FUNCTIONS[name]
    b = A[::-1] * 2
    want = f(A, b)
    got = f(ha.asarray(A.copy()), ha.asarray(b.copy()))
    assert_same(got, want)


def test_view_results_share_the_storage() -> None:
    x = ha.asarray(np.arange(6.0))
    r = np.reshape(x, (2, 3))
    assert isinstance(r, ha.HostPtrArray) and r._s is x._s
    r[1, 2] = -1.0
    assert float(np.asarray(x, copy=True)[5]) == -1.0
    parts = np.split(x, 2)
    assert all(p._s is x._s for p in parts)


def test_functions_that_write_their_argument() -> None:
    x = ha.zeros((3, 3))
    np.fill_diagonal(x, 2.0)
    np.copyto(x[0], np.array([1.0, 1.0, 1.0]))
    np.put(x, [8], [9.0])
    want = np.diag([2.0, 2.0, 2.0])
    want[0] = 1.0
    want[2, 2] = 9.0
    np.testing.assert_array_equal(np.asarray(x), want)
    out = ha.zeros(3)
    assert np.mean(ha.asarray(want), axis=0, out=out) is out
    np.testing.assert_allclose(np.asarray(out), want.mean(axis=0))


def test_save_load_and_testing_helpers(tmp_path) -> None:
    x = ha.asarray(A)
    np.save(tmp_path / "x.npy", x)
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), A)
    np.testing.assert_allclose(x, A)
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(x, A + 1)


def test_foreign_array_types_are_left_to_their_library() -> None:
    class Other:
        def __array_ufunc__(self, *args, **kwargs):
            return "other"

        def __array_function__(self, *args, **kwargs):
            return "other"

    assert np.add(ha.zeros(2), Other()) == "other"
    assert np.concatenate([ha.zeros(2), Other()]) == "other"


METHODS = {
    "reshape": lambda a: a.reshape(3, 4), "reshape_tuple": lambda a: a.reshape((2, 6)),
    "transpose": lambda a: a.transpose(), "transpose_axes": lambda a: a.transpose(1, 0),
    "sum": lambda a: a.sum(), "sum_axis": lambda a: a.sum(axis=0),
    "mean": lambda a: a.mean(axis=1), "std": lambda a: a.std(), "var": lambda a: a.var(0),
    "min": lambda a: a.min(), "max": lambda a: a.max(axis=1), "argmax": lambda a: a.argmax(),
    "any": lambda a: a.any(), "all": lambda a: a.all(axis=0), "cumsum": lambda a: a.cumsum(),
    "prod": lambda a: a.prod(axis=1), "ravel": lambda a: a.ravel(),
    "flatten": lambda a: a.flatten(), "squeeze": lambda a: a[:1].squeeze(),
    "astype": lambda a: a.astype(np.int32), "copy": lambda a: a.copy(),
    "clip": lambda a: a.clip(1, 5), "round": lambda a: (a / 3).round(2),
    "dot": lambda a: a.dot(a.T), "nonzero": lambda a: a.nonzero(),
    "argsort": lambda a: a.argsort(axis=0), "take": lambda a: a.take([0, 2], axis=1),
    "repeat": lambda a: a.repeat(2, axis=0), "diagonal": lambda a: a.diagonal(),
    "trace": lambda a: a.trace(), "swapaxes": lambda a: a.swapaxes(0, 1),
    "conj": lambda a: a.conj(), "real": lambda a: a.real, "imag": lambda a: a.imag,
    "itemsize": lambda a: a.itemsize, "view": lambda a: a.view(np.int64),
    "searchsorted": lambda a: a.ravel().searchsorted([2.5, 7.0]),
}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_ndarray_methods_match_numpy(name) -> None:
    a = (np.arange(12.0).reshape(4, 3) * 7) % 11
    assert_same(METHODS[name](ha.asarray(a.copy())), METHODS[name](a))


def test_in_place_ndarray_methods() -> None:
    a = np.array([[3.0, 1.0], [0.0, 2.0]])
    x = ha.asarray(a.copy())
    x.sort(axis=1)
    np.testing.assert_array_equal(np.asarray(x), np.sort(a, axis=1))
    x.fill(4.0)
    np.testing.assert_array_equal(np.asarray(x), np.full((2, 2), 4.0))
    v = x.reshape(4)
    v[0] = -1.0  # reshape is a view of the same storage, as in numpy
    assert float(np.asarray(x)[0, 0]) == -1.0


# -- Python conveniences -----------------------------------------------------------------------

@FEW
@given(a=floats)
def test_python_conveniences_match_numpy(a) -> None:
    x = ha.asarray(a)
    assert len(x) == len(a)
    assert x.tolist() == a.tolist()
    assert x.item(0) == a.item(0)
    assert (a.flat[0] in x) and (1e9 not in x)
    items = list(x)
    assert len(items) == len(a)
    for got, want in zip(items, a):
        if a.ndim == 1:
            # 0-d arrays (as array-api-strict, CuPy and PyTorch yield), equal to numpy's
            # scalars and not sharing x's memory
            assert type(got) is ha.HostPtrArray and got.shape == () and got.dtype == a.dtype
            assert got == want and not np.shares_memory(np.asarray(got), np.asarray(x))
        else:
            assert isinstance(got, ha.HostPtrArray)
            np.testing.assert_array_equal(np.asarray(got), want)
    assert str(x) == str(a)
    assert format(x) == str(a)


def test_zero_d_conveniences() -> None:
    x = ha.asarray(np.float64(2.5))
    assert f"{x:.3f}" == "2.500" == f"{np.asarray(2.5):.3f}"
    assert x.item() == 2.5
    with pytest.raises(TypeError):
        len(x)
    with pytest.raises(TypeError):
        iter(x)
    with pytest.raises(TypeError):
        format(ha.zeros(2), ".2f")


def test_copy_deepcopy_and_pickle_are_independent() -> None:
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    x = ha.asarray(a)
    for y in (copy.copy(x), copy.deepcopy(x), pickle.loads(pickle.dumps(x)),
              pickle.loads(pickle.dumps(x, protocol=5))):
        assert isinstance(y, ha.HostPtrArray) and y.dtype == x.dtype and y.device == x.device
        np.testing.assert_array_equal(np.asarray(y), a)
        y[0, 0] = 100
        assert int(np.asarray(x)[0, 0]) == 0
    view = pickle.loads(pickle.dumps(x[:, 1:]))
    np.testing.assert_array_equal(np.asarray(view), a[:, 1:])
    memo: dict[int, object] = {}
    pair = copy.deepcopy([x, x], memo)
    assert pair[0] is pair[1]


@FEW
@given(a=st.sampled_from([np.bool_, np.int8, np.uint32, np.int64, np.float32, np.complex128])
       .flatmap(lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0,
                                                           max_side=4))),
       protocol=st.integers(2, pickle.HIGHEST_PROTOCOL))
def test_pickle_round_trips_every_dtype_and_shape(a, protocol) -> None:
    x = ha.asarray(a)
    y = pickle.loads(pickle.dumps(x, protocol=protocol))
    assert y.dtype == a.dtype and y.shape == a.shape and y.device == x.device
    np.testing.assert_array_equal(np.asarray(y), a)
    z = copy.deepcopy(x)
    np.testing.assert_array_equal(np.asarray(z), a)
    if a.size:
        assert not np.shares_memory(np.asarray(y), a)
        assert not np.shares_memory(np.asarray(z), a)


def test_unpickled_array_of_a_missing_device_goes_to_the_host() -> None:
    with pytest.warns(RuntimeWarning, match="opencl:97:0"):
        y = _interop._rebuild(np.arange(3.0), "opencl:97:0")
    assert y.device == ha.device("cpu")
    np.testing.assert_array_equal(np.asarray(y), [0.0, 1.0, 2.0])


def test_repr_and_str_are_numpy_style() -> None:
    a = np.array([[1.5, 2.0], [3.0, 4.0]])
    x = ha.asarray(a)
    body = np.array2string(a, separator=", ", prefix="HostPtrArray(")
    assert repr(x) == f"HostPtrArray({body}, dtype=float64)"
    assert "\n              [3." in repr(x)  # continuation lines line up under the bracket
    assert str(x) == str(a)


@pytest.mark.device
def test_repr_shows_the_device(cl_device) -> None:
    x = ha.asarray(np.ones(3, np.float32), device=cl_device)
    assert repr(x) == f"HostPtrArray([1., 1., 1.], dtype=float32, device='{cl_device}')"


# -- arrays whose newest data is on the device -------------------------------------------------

SRC = r"""
__kernel void affine(__global float *x, const float a, const float b) {
    int i = get_global_id(0); x[i] = a * x[i] + b;
}
__kernel void total(__global const float *x, __global float *out, const int n) {
    float s = 0; for (int i = 0; i < n; ++i) s += x[i]; out[0] = s;
}
"""


@pytest.mark.device
def test_numpy_calls_see_kernel_writes_and_acquire_once(cl_device) -> None:
    prg = ha.Program(SRC, device=cl_device)
    a = np.arange(64, dtype=np.float32)
    x = ha.asarray(a, device=cl_device, copy=True)
    prg.affine(64, x, 2.0, 1.0)
    ha.reset_stats()
    want = 2 * a + 1
    r = np.sin(x)
    assert ha.stats().acquires == 1
    np.testing.assert_allclose(np.asarray(r), np.sin(want), rtol=1e-6)
    assert r.device == cl_device and _address(r._a) % cl_device.alignment == 0
    assert float(np.sum(x)) == float(want.sum())
    np.testing.assert_allclose(np.mean(x), want.mean())
    assert ha.stats().acquires == 1  # nothing written since: no second acquire
    assert ha.stats().publishes == 0


DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.uint64, np.float32, np.float64,
          np.complex64]
MIXED_UFUNCS = [np.add, np.multiply, np.maximum, np.less, np.equal, np.floor_divide,
                np.true_divide, np.power, np.bitwise_and, np.logical_xor, np.divmod, np.modf,
                np.sqrt, np.negative, np.isnan, np.frexp]


@pytest.mark.device
@FEW
@given(data=st.data(), f=st.sampled_from(MIXED_UFUNCS))
def test_ufuncs_on_device_arrays_match_numpy_in_aligned_results(data, f, cl_device) -> None:
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=f.nin, min_dims=1,
                                                         max_dims=3, max_side=4))
    arrays = [data.draw(hnp.arrays(st.sampled_from(DTYPES), s)) for s in shapes.input_shapes]
    if data.draw(st.booleans()) and f.nin == 2:
        arrays[1] = data.draw(st.sampled_from([2, 2.5, True, 3j]))  # a Python scalar
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = f(*arrays)
        except (TypeError, OverflowError, ValueError) as e:  # numpy refuses: so must we
            with pytest.raises(type(e)):
                f(*(ha.asarray(a, device=cl_device) if isinstance(a, np.ndarray) else a
                    for a in arrays))
            return
        got = f(*(ha.asarray(a, device=cl_device) if isinstance(a, np.ndarray) else a
                  for a in arrays))
    for g, w in zip(got if f.nout > 1 else (got,), want if f.nout > 1 else (want,)):
        assert_same(g, w)
        assert g.device == cl_device
        assert _address(g._a) % cl_device.alignment == 0 or g.size == 0


@pytest.mark.device
def test_out_on_a_device_array_is_published_to_the_next_launch(cl_device) -> None:
    prg = ha.Program(SRC, device=cl_device)
    x = ha.zeros(16, dtype=ha.float32, device=cl_device)
    prg.affine(16, x, 1.0, 3.0)  # x = 3 on the device
    np.multiply(x, 2, out=x)  # a host write after reading the device's values
    out = ha.zeros(1, dtype=ha.float32, device=cl_device)
    ha.reset_stats()
    prg.total(1, x, out, 16)
    assert ha.stats().publishes >= 1
    assert float(np.asarray(out)[0]) == 16 * 6.0
    np.add.at(x, [0], 1.0)  # ufunc.at is a host write too
    prg.total(1, x, out, 16)
    assert float(np.asarray(out)[0]) == 16 * 6.0 + 1


@pytest.mark.device
def test_numpy_function_view_results_stay_on_the_device(cl_device) -> None:
    prg = ha.Program(SRC, device=cl_device)
    x = ha.zeros(8, dtype=ha.float32, device=cl_device)
    r = np.reshape(x, (2, 4))
    assert r.device == cl_device and r._s is x._s
    prg.affine(8, x, 1.0, 5.0)
    np.testing.assert_array_equal(np.asarray(r), np.full((2, 4), 5.0, np.float32))


@pytest.mark.device
def test_pickle_keeps_the_device_by_name(cl_device) -> None:
    prg = ha.Program(SRC, device=cl_device)
    x = ha.zeros(8, dtype=ha.float32, device=cl_device)
    prg.affine(8, x, 1.0, 2.0)
    y = pickle.loads(pickle.dumps(x))
    assert y.device == cl_device and y._s is not x._s
    np.testing.assert_array_equal(np.asarray(y), np.full(8, 2.0, np.float32))
    prg.affine(8, y, 1.0, 1.0)  # the copy works in kernels and is independent
    np.testing.assert_array_equal(np.asarray(y), np.full(8, 3.0, np.float32))
    np.testing.assert_array_equal(np.asarray(x), np.full(8, 2.0, np.float32))


_UNPICKLE = """
import pickle, sys, warnings
import numpy as np
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    y = pickle.loads(sys.stdin.buffer.read())
print("WARNED", [str(w.message) for w in caught if w.category is RuntimeWarning])
print(y.device, np.asarray(y).tolist())
"""


@pytest.mark.device
def test_pickle_to_a_process_without_the_device_warns_and_uses_the_host(cl_device) -> None:
    x = ha.asarray(np.arange(4.0), device=cl_device)
    env = dict(os.environ, OCL_ICD_VENDORS="/nonexistent", OCL_ICD_FILENAMES="",
               HOSTARRAY_DEVICE="")
    p = subprocess.run([sys.executable, "-c", _UNPICKLE], input=pickle.dumps(x),
                       capture_output=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    warned, last = p.stdout.decode().strip().splitlines()[-2:]
    assert str(cl_device) in warned
    assert last == "cpu [0.0, 1.0, 2.0, 3.0]"


def test_warnings_module_is_quiet_for_host_pickles() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = pickle.loads(pickle.dumps(ha.zeros(3)))
    assert y.device == ha.device("cpu")


def test_clip_and_flatten_methods_take_numpys_arguments() -> None:
    # x.clip(0) (one bound, as SciPy's spearmanr calls it) and x.flatten("F") raised TypeError
    a = np.array([[-1.0, 2.0, 5.0], [0.5, -3.0, 9.0]])
    x = ha.asarray(a)
    for args, kw in [((0,), {}), ((), {"max": 1}), ((None, 1), {}), ((0, 1), {}),
                     ((), {"min": 0, "max": 4})]:
        np.testing.assert_array_equal(np.asarray(x.clip(*args, **kw)), a.clip(*args, **kw))
    out = ha.zeros((2, 3))
    x.clip(0, 1, out=out)
    np.testing.assert_array_equal(np.asarray(out), a.clip(0, 1))
    for order in ("C", "F", "A", "K"):
        np.testing.assert_array_equal(np.asarray(x.flatten(order)), a.flatten(order))
    np.testing.assert_array_equal(np.asarray(x.flatten(order="F")), a.flatten(order="F"))


def test_no_buffer_protocol_so_numpy_asks_array() -> None:
    # from Python 3.12 numpy converts through an object's buffer (PEP 688 __buffer__)
    # before __array__: np.asarray(x, copy=True) became a raw view of all of x (an escape),
    # and the next launch published the whole array (found on the H200 host, Python 3.12)
    assert not hasattr(ha.HostPtrArray, "__buffer__")
    with pytest.raises(TypeError):  # the docs say to pass np.asarray(x)
        memoryview(ha.asarray(np.arange(3.0)))
    x = ha.asarray(np.arange(6.0))
    np.testing.assert_array_equal(np.asarray(x, copy=True), np.arange(6.0))
    assert not x._s.escaped  # a copy, not a raw view


@pytest.mark.device
def test_a_copy_for_numpy_is_no_escape(cl_device) -> None:
    # np.asarray(x, copy=True) and np.array(x) copy what they read: the next launch on x
    # publishes nothing (an escape would publish the whole array)
    prg = ha.Program("__kernel void addv(__global float *y, const float v) "
                     "{ y[get_global_id(0)] += v; }", device=cl_device)
    x = ha.asarray(np.arange(64, dtype=np.float32), device=cl_device)
    prg.addv(x.shape, x, 1.0)
    for convert in (lambda: np.asarray(x, copy=True), lambda: np.array(x)):
        np.testing.assert_array_equal(convert(), np.arange(64, dtype=np.float32) + 1)
        ha.reset_stats()
        prg.addv(x.shape, x, 0.0)
        assert ha.stats().publishes == 0


def test_bytes_are_numpys_raw_bytes() -> None:
    # bytes(x) built one byte per element before 3.12 (no buffer protocol): b'\x01\x02', or a
    # ValueError for an element above 255, where numpy gives the raw bytes
    for a in (np.array([1, 2, 300], np.int32), np.arange(6.0).reshape(2, 3).T, np.zeros(0)):
        assert bytes(ha.asarray(a)) == bytes(a) == a.tobytes()
