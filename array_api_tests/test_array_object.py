"""The array object: attributes, every operator with its reflected and in-place forms,
comparisons, conversions to Python scalars, and __getitem__/__setitem__ with the standard's
indexing (integers, slices with negative steps and empty ones, ellipsis, None, boolean masks,
integer arrays)."""

from __future__ import annotations

import math
import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hostarray as ha

from . import strategies as strat
from .helpers import (
    HOST,
    assert_like,
    assert_values,
    suite_device,
    suite_input,
    tame_complex,
    to_strict,
)

# operator -> (function name on the spec's page, input kind, result rule)
BINARY_OPS = {
    "add": (operator.add, "numeric"), "sub": (operator.sub, "numeric"),
    "mul": (operator.mul, "numeric"), "truediv": (operator.truediv, "floating"),
    "floordiv": (operator.floordiv, "real"), "mod": (operator.mod, "real"),
    "pow": (operator.pow, "numeric"), "and": (operator.and_, "integer or boolean"),
    "or": (operator.or_, "integer or boolean"), "xor": (operator.xor, "integer or boolean"),
    "lshift": (operator.lshift, "integer"), "rshift": (operator.rshift, "integer"),
}
INPLACE = {"add": operator.iadd, "sub": operator.isub, "mul": operator.imul,
           "truediv": operator.itruediv, "floordiv": operator.ifloordiv,
           "mod": operator.imod, "pow": operator.ipow, "and": operator.iand,
           "or": operator.ior, "xor": operator.ixor, "lshift": operator.ilshift,
           "rshift": operator.irshift, "matmul": operator.imatmul}
COMPARISONS = {"eq": (operator.eq, "any"), "ne": (operator.ne, "any"),
               "lt": (operator.lt, "real"), "le": (operator.le, "real"),
               "gt": (operator.gt, "real"), "ge": (operator.ge, "real")}


def _safe(name: str, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if name in ("lshift", "rshift"):
        b = np.asarray(np.clip(b, 0, 7), dtype=b.dtype)
    if name == "pow" and b.dtype.kind in "iu":
        b = np.asarray(np.clip(b, 0, 4), dtype=b.dtype)
    if a.dtype.kind == "c" or b.dtype.kind == "c":
        a, b = tame_complex(a), tame_complex(b)
    return a, b


def _strict_op(op, a, b):
    with np.errstate(all="ignore"):
        return op(to_strict(a), to_strict(b))


# -- attributes ------------------------------------------------------------------------------
@given(x=strat.arrays(strat.dtypes("any")))
def test_attributes(x) -> None:
    h = ha.asarray(x)
    assert h.dtype == x.dtype and h.shape == x.shape and h.ndim == x.ndim
    assert h.size == x.size and type(h.size) is int and type(h.shape) is tuple
    assert h.device == HOST
    if x.ndim >= 2:
        assert_values(np.asarray(h.mT), np.swapaxes(x, -1, -2))
    else:
        with pytest.raises(ValueError):
            _ = h.mT
    if x.ndim == 2:
        assert_values(np.asarray(h.T), x.T)


def test_T_requires_2d() -> None:
    with pytest.raises(ValueError):
        _ = ha.asarray(np.zeros((2, 2, 2))).T


# -- binary operators ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(BINARY_OPS))
@given(data=st.data())
def test_binary_operator(name, data) -> None:
    op, kind = BINARY_OPS[name]
    # floordiv/mod at infinities: numpy departs from the spec (test_special_cases.py)
    a, b = _safe(name, *data.draw(strat.binary_arrays(kind, finite=name in ("floordiv", "mod")),
                                  label="x1, x2"))
    want = _strict_op(op, a, b)
    with np.errstate(all="ignore"):
        got = op(suite_input(a), suite_input(b))
    assert_like(got, want, msg=f"__{name}__", device=suite_device())
    if name not in ("lshift", "rshift"):  # see test_shift_operator_dtype_is_self's
        assert got.dtype == strat.promote(a.dtype, b.dtype)  # the spec's promotion table


@pytest.mark.xfail(strict=True, reason="deviation (hostarray._api.DEVIATIONS, "
                   "HostPtrArray.__lshift__/__rshift__): the result dtype follows type promotion "
                   "as bitwise_left_shift does; the array object page says self's dtype")
@pytest.mark.parametrize("op", [operator.lshift, operator.rshift])
def test_shift_operator_dtype_is_self(op) -> None:
    x = ha.asarray(np.array([1, 2], dtype=np.int8))
    y = ha.asarray(np.array([1, 1], dtype=np.int16))
    assert op(x, y).dtype == ha.int8


@pytest.mark.parametrize("name", sorted(BINARY_OPS))
@given(data=st.data())
def test_reflected_operator_with_python_scalar(name, data) -> None:
    # ``scalar op array`` calls array.__r<op>__; the result has the array's dtype
    op, kind = BINARY_OPS[name]
    dt = data.draw(strat.dtypes(kind), label="dtype")
    x = data.draw(strat.arrays(dt, finite=True), label="x")
    s = data.draw(strat.python_scalars(dt), label="scalar")
    if name in ("lshift", "rshift", "pow") and dt.kind in "iu":
        x = np.asarray(np.clip(x, 0, 4), dtype=dt)
        s = min(abs(s), 4)
    want = _strict_op(op, s, x)
    with np.errstate(all="ignore"):
        got = op(s, suite_input(x))
        got_direct = getattr(suite_input(x), f"__r{name}__")(s)
    assert_like(got, want, msg=f"__r{name}__", device=suite_device())
    assert_like(got_direct, want, msg=f"__r{name}__ called directly", device=suite_device())
    assert got.dtype == dt


@pytest.mark.parametrize("name", sorted(BINARY_OPS))
@given(data=st.data())
def test_operator_with_python_scalar(name, data) -> None:
    op, kind = BINARY_OPS[name]
    dt = data.draw(strat.dtypes(kind), label="dtype")
    x = data.draw(strat.arrays(dt, finite=True), label="x")
    s = data.draw(strat.python_scalars(dt), label="scalar")
    if name in ("lshift", "rshift", "pow") and dt.kind in "iu":
        s = min(abs(s), 4)
    want = _strict_op(op, x, s)
    with np.errstate(all="ignore"):
        got = op(suite_input(x), s)
    assert_like(got, want, msg=f"__{name}__ with a scalar", device=suite_device())


@pytest.mark.parametrize("name", sorted(INPLACE))
@given(data=st.data())
def test_inplace_operator(name, data) -> None:
    # in place: the promoted dtype is x1's and x2 broadcasts to x1's shape
    iop = INPLACE[name]
    kind = "numeric" if name == "matmul" else BINARY_OPS[name][1]
    d1 = data.draw(strat.dtypes(kind), label="x1 dtype")
    d2 = data.draw(st.sampled_from([d for d in strat.promotable(d1.name, strat.KINDS[kind])
                                    if strat.promote(d1, d) == d1]).map(np.dtype),
                   label="x2 dtype")
    if name == "matmul":
        n = data.draw(st.integers(1, 3))
        a = data.draw(strat.arrays(d1, (n, n), finite=True, min_value=-9, max_value=9))
        b = data.draw(strat.arrays(d2, (n, n), finite=True, min_value=-9, max_value=9))
    else:
        shape = data.draw(strat.shapes(0, 3, max_side=3), label="x1 shape")
        bshape = data.draw(strat.shapes_broadcasting_to(shape), label="x2 shape")
        fin = name in ("floordiv", "mod")
        a = data.draw(strat.arrays(d1, shape, finite=fin))
        b = data.draw(strat.arrays(d2, bshape, finite=fin))
        a, b = _safe(name, a, b)
    want = _strict_op(iop, a, b)
    x = suite_input(a)
    alias = x[...]  # a view of the same storage sees the in-place write
    before = id(x)
    with np.errstate(all="ignore"):
        x = iop(x, suite_input(b))
    assert id(x) == before, f"__i{name}__ must return the same array"
    assert_like(x, want, msg=f"__i{name}__", device=suite_device())
    assert_values(np.asarray(alias), np.asarray(want), msg=f"__i{name}__ through a view")


@pytest.mark.parametrize("name", sorted(COMPARISONS))
@given(data=st.data())
def test_comparison_operator(name, data) -> None:
    op, kind = COMPARISONS[name]
    a, b = data.draw(strat.binary_arrays(kind), label="x1, x2")
    got = op(suite_input(a), suite_input(b))
    assert_like(got, _strict_op(op, a, b), msg=f"__{name}__", device=suite_device())
    assert got.dtype == ha.bool
    s = data.draw(strat.python_scalars(a.dtype), label="scalar")
    assert_like(op(suite_input(a), s), _strict_op(op, a, s), msg=f"__{name}__ scalar",
                device=suite_device())


@pytest.mark.parametrize("op,kind", [(operator.abs, "numeric"), (operator.neg, "numeric"),
                                     (operator.pos, "numeric"),
                                     (operator.invert, "integer or boolean")])
@given(data=st.data())
def test_unary_operator(op, kind, data) -> None:
    x = data.draw(strat.arrays(strat.dtypes(kind)), label="x")
    with np.errstate(all="ignore"):
        got = op(suite_input(x))
        want = op(to_strict(x))
    assert_like(got, want, msg=op.__name__, device=suite_device())


@given(data=st.data())
def test_matmul_operator(data) -> None:
    dt = data.draw(strat.dtypes("numeric"), label="dtype")
    n, k, m = (data.draw(st.integers(1, 3)) for _ in range(3))
    a = data.draw(strat.arrays(dt, (n, k), finite=True, min_value=-9, max_value=9))
    b = data.draw(strat.arrays(dt, (k, m), finite=True, min_value=-9, max_value=9))
    assert_like(suite_input(a) @ suite_input(b), to_strict(a) @ to_strict(b),
                rtol=1e-4 if dt in (np.float32, np.complex64) else 1e-12, device=suite_device())


@pytest.mark.parametrize("name", ["add", "sub", "mul", "truediv", "pow", "matmul"])
def test_reflected_called_with_an_array(name) -> None:
    # x2.__r<op>__(x1) computes x1 <op> x2 also when x1 is an array (a direct call)
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    b = np.array([[0.5, 1.0], [2.0, 3.0]])
    got = getattr(suite_input(b), f"__r{name}__")(suite_input(a))
    want = getattr(operator, name)(to_strict(a), to_strict(b))
    assert_like(got, want, msg=f"__r{name}__", device=suite_device())


def test_numpy_on_the_left_defers_to_hostarray() -> None:
    # numpy array op HostPtrArray: __array_priority__ / __array_ufunc__ give a HostPtrArray
    r = np.arange(3.0) + ha.asarray(np.ones(3))
    assert isinstance(r, ha.HostPtrArray)
    np.testing.assert_array_equal(np.asarray(r), [1.0, 2.0, 3.0])


# -- conversions ---------------------------------------------------------------------------
@given(data=st.data())
def test_python_scalar_conversions(data) -> None:
    dt = data.draw(strat.dtypes("any"), label="dtype")
    x = data.draw(strat.arrays(dt, shape=()), label="x")
    h = ha.asarray(x)
    v = x.item()
    assert type(bool(h)) is bool and bool(h) == bool(v)
    if dt.kind != "c":
        f = float(h)
        assert type(f) is float and (f == float(v) or (math.isnan(f) and math.isnan(v)))
        if dt.kind in "biu" or np.isfinite(x):
            i = int(h)
            assert type(i) is int and i == int(v)
    c = complex(h)
    assert type(c) is complex
    if dt.kind in "iu":
        assert type(h.__index__()) is int and h.__index__() == v
        assert [10, 20, 30, 40][ha.asarray(np.array(1, dt))] == 20
    elif dt.kind in "fc":
        with pytest.raises(TypeError):
            h.__index__()


def test_bool_of_many_elements_raises() -> None:
    with pytest.raises((ValueError, TypeError)):
        bool(ha.asarray([1, 2]))


def test_int_of_nonfinite_float_raises() -> None:
    with pytest.raises(OverflowError):
        int(ha.asarray(np.inf))
    with pytest.raises(ValueError):
        int(ha.asarray(np.nan))


def test_iteration_of_1d() -> None:
    # 2024.12: iteration over a 1-D array gives 0-D arrays (x[i]: copies, not views)
    x = ha.asarray(np.array([1.0, 2.0]))
    items = list(x)
    assert len(items) == 2 and all(isinstance(i, ha.HostPtrArray) for i in items)
    assert all(i.shape == () for i in items) and float(items[1]) == 2.0
    items[0][...] = 7.0
    assert float(x[0]) == 1.0


def test_dlpack_roundtrip() -> None:
    x = ha.asarray(np.arange(6, dtype=np.int16).reshape(2, 3))
    dev = x.__dlpack_device__()
    assert isinstance(dev, tuple) and int(dev[0]) == 1  # kDLCPU
    y = np.from_dlpack(x)
    np.testing.assert_array_equal(y, np.arange(6).reshape(2, 3))
    assert y.dtype == np.int16


def test_to_device_roundtrip() -> None:
    x = ha.asarray(np.arange(3.0))
    assert x.to_device("cpu").device == HOST
    assert x.to_device(HOST) is x or np.shares_memory(np.asarray(x.to_device(HOST)),
                                                      np.asarray(x))


# -- indexing ----------------------------------------------------------------------------------
def _ha_key(key):
    if isinstance(key, np.ndarray):
        return ha.asarray(key)
    if isinstance(key, tuple):
        return tuple(_ha_key(k) for k in key)
    return key


def _check_getitem(x: np.ndarray, key) -> None:
    want = x[key]
    got = ha.asarray(x)[_ha_key(key)]
    assert isinstance(got, ha.HostPtrArray), f"x[{key!r}] gave {type(got).__name__}"
    assert got.shape == np.shape(want) and got.dtype == x.dtype, f"x[{key!r}]"
    assert_values(np.asarray(got), np.asarray(want), signed_zeros=True, msg=f"x[{key!r}]")


slices_with_steps = st.builds(slice, st.none() | st.integers(-6, 6), st.none()
                              | st.integers(-6, 6), st.none() | st.sampled_from([1, 2, 3, -1,
                                                                                 -2, -3]))


@given(x=strat.arrays(strat.dtypes("any"), max_dims=3), data=st.data())
def test_getitem_basic(x, data) -> None:
    # ints, slices (negative steps, empty, out of range), ellipsis, None
    key = data.draw(hnp.basic_indices(x.shape, allow_newaxis=True, allow_ellipsis=True),
                    label="key")
    _check_getitem(x, key)


@given(x=strat.arrays(strat.dtypes("any"), min_dims=1, max_dims=3), data=st.data())
def test_getitem_slices(x, data) -> None:
    key = tuple(data.draw(slices_with_steps) for _ in range(data.draw(
        st.integers(1, x.ndim))))
    _check_getitem(x, key)


def test_getitem_edge_cases() -> None:
    x = np.arange(24.0).reshape(2, 3, 4)
    for key in [(), ..., (..., 0), (0, ...), (None, ..., None), (1, -1, -4), (slice(None,
                None, -1),), (slice(5, 1, -2),), (slice(2, 2),), (slice(-100, 100),),
                (0, None, slice(None, None, -1)), (..., None), (-1,)]:
        _check_getitem(x, key)
    _check_getitem(np.asarray(3.5), ())
    _check_getitem(np.asarray(3.5), ...)
    _check_getitem(np.asarray(3.5), None)


@pytest.mark.parametrize("key", [(..., ...), (0, 0, 0), (slice(None), 0, 1), (..., 0, 0, 0)])
def test_getitem_invalid_keys_raise(key) -> None:
    # one ellipsis at most; no more indices than dimensions (2-D here)
    with pytest.raises(IndexError):
        ha.asarray(np.zeros((2, 3)))[key]


def test_getitem_out_of_range_raises() -> None:
    with pytest.raises(IndexError):
        ha.asarray(np.arange(3))[3]
    with pytest.raises(IndexError):
        ha.asarray(np.arange(3))[-4]


@given(x=strat.arrays(strat.dtypes("any"), max_dims=3), data=st.data())
def test_getitem_boolean_mask(x, data) -> None:
    k = data.draw(st.integers(0, x.ndim), label="mask dims")
    mask = data.draw(strat.arrays("bool", x.shape[:k]), label="mask")
    if data.draw(st.booleans(), label="as sole index"):
        _check_getitem(x, mask)
    else:
        _check_getitem(x, (mask, ...))


@given(x=strat.arrays(strat.dtypes("any"), min_dims=1, max_dims=3, min_side=1),
       data=st.data())
def test_getitem_integer_arrays(x, data) -> None:
    # 2024.12: integer arrays on every axis (broadcast together), possibly negative
    idx = data.draw(hnp.integer_array_indices(x.shape, result_shape=strat.shapes(0, 2,
                                                                                  max_side=3),
                                              dtype=np.dtype("int64")), label="indices")
    _check_getitem(x, idx)
    if x.ndim >= 1:
        one = data.draw(strat.arrays("int64", shape=strat.shapes(1, 2, max_side=3),
                                     min_value=-x.shape[0], max_value=x.shape[0] - 1))
        _check_getitem(x, (one, ...))


def test_getitem_basic_returns_view() -> None:
    # hostarray's basic indexing gives views (the standard leaves this to the library)
    x = ha.asarray(np.arange(6.0))
    v = x[1:4]
    v[0] = 100.0
    assert float(x[1]) == 100.0


@given(data=st.data())
def test_setitem(data) -> None:
    dt = data.draw(strat.dtypes("any"), label="dtype")
    x = data.draw(strat.arrays(dt, max_dims=3), label="x")
    kind = data.draw(st.sampled_from(["basic", "mask", "int arrays"]), label="key kind")
    if kind == "basic":
        key = data.draw(hnp.basic_indices(x.shape, allow_newaxis=False, allow_ellipsis=True))
    elif kind == "mask":
        key = data.draw(strat.arrays("bool", x.shape))
    else:
        if x.ndim == 0 or 0 in x.shape:
            key = ()
        else:
            key = data.draw(hnp.integer_array_indices(x.shape, dtype=np.dtype("int64")))
    target_shape = x[key].shape
    # values: a Python scalar, or an array broadcasting to the selection
    if data.draw(st.booleans(), label="scalar value"):
        value = data.draw(strat.python_scalars(dt))
        v_ha = value
    else:
        vshape = data.draw(strat.shapes_broadcasting_to(target_shape))
        value = data.draw(strat.arrays(dt, vshape))
        v_ha = ha.asarray(value)
    want = x.copy()
    if kind == "int arrays" and key != ():
        # repeated integer indices: which write wins is unspecified; keep them unique
        flat = np.ravel_multi_index(tuple(np.broadcast_arrays(*key)), x.shape, mode="wrap")
        if len(np.unique(flat)) != flat.size:
            return
    want[key] = value
    h = ha.asarray(x.copy())
    h[_ha_key(key)] = v_ha
    assert_values(np.asarray(h), want, signed_zeros=True, msg=f"x[{key!r}] = ...")


def test_setitem_promotes_python_scalars_only_within_kind() -> None:
    x = ha.asarray(np.zeros(3, dtype=np.float32))
    x[1] = 2  # an int into a float array is allowed (Python scalar)
    x[2] = 1.5
    np.testing.assert_array_equal(np.asarray(x), np.array([0.0, 2.0, 1.5], np.float32))
    assert x.dtype == ha.float32


@given(data=st.data())
def test_setitem_array_value_promotes_to_target(data) -> None:
    # 2025.12: an array value whose dtype promotes to x's dtype is cast to x's dtype
    dt = data.draw(strat.dtypes("any"), label="x dtype")
    vdt = data.draw(st.sampled_from([d for d in strat.promotable(dt.name, strat.ALL)
                                     if strat.promote(dt, d) == dt]).map(np.dtype),
                    label="value dtype")
    x = data.draw(strat.arrays(dt, shape=strat.shapes(1, 2, min_side=1)), label="x")
    v = data.draw(strat.arrays(vdt, shape=x.shape[1:]), label="value")
    h = ha.asarray(x.copy())
    h[0] = ha.asarray(v)
    want = x.copy()
    want[0] = v
    assert h.dtype == dt
    assert_values(np.asarray(h), want, signed_zeros=True)


# -- device ----------------------------------------------------------------------------------
@pytest.mark.device
def test_operators_on_device(cl_device) -> None:
    a = ha.asarray(np.arange(4.0), device=cl_device)
    b = ha.asarray(np.ones(4), device=cl_device)
    for r in (a + b, a - 1.0, 2.0 * a, a / b, a // b, a % 3.0, a ** 2, -a, abs(a), a < b,
              a == b, a @ b, a[1:], a[a > 1.0], a[ha.asarray(np.array([0, 2]),
                                                             device=cl_device)]):
        assert r.device == cl_device
    a += b
    assert a.device == cl_device
    np.testing.assert_array_equal(np.asarray(a), [1.0, 2.0, 3.0, 4.0])


@pytest.mark.device
def test_setitem_after_kernel_write(cl_device) -> None:
    # a partial host write after a device write must keep the device's other elements
    x = ha.zeros(8, dtype=ha.float32, device=cl_device)
    prog = ha.Program("__kernel void one(__global float *a) { a[get_global_id(0)] = 1.0f; }",
                      device=cl_device)
    prog.one((8,), x)
    x[0] = 5.0
    np.testing.assert_array_equal(np.asarray(x), [5.0] + [1.0] * 7)
    assert float(x[1]) == 1.0


@pytest.mark.device
@pytest.mark.parametrize("op", [operator.iadd, operator.imul, operator.isub, operator.itruediv])
def test_inplace_after_kernel_write(op, cl_device) -> None:
    # an in-place operator reads x: the kernel's values must be acquired first
    x = ha.zeros(8, dtype=ha.float32, device=cl_device)
    ha.Program("__kernel void two(__global float *a) { a[get_global_id(0)] = 2.0f; }",
               device=cl_device).two((8,), x)
    view = x[2:6]
    np.testing.assert_array_equal(np.asarray(view), np.full(4, 2.0, np.float32))
    op(x, 4.0)
    want = op(np.full(8, 2.0, np.float32), np.float32(4.0))
    np.testing.assert_array_equal(np.asarray(x), want)
    np.testing.assert_array_equal(np.asarray(view), want[2:6])
