"""The device path of the element-wise functions and operators gives the host path's answers.

Differential tests: every function of the element-wise ``TABLE`` and every operator
(binary, reflected with a Python scalar on the left, in-place, unary) runs on inputs
whose newest data is on the OpenCL device (a kernel wrote them last) with
``ha.set_device_compute_threshold(0)``, and the result must equal what the host path
(numpy, through the same namespace function) gives on host arrays holding the same
values: all real data types, broadcasting (0-d arrays, size-1 axes), Python scalars,
special values, views and in-place aliasing.  Integer and bool results, and the
functions IEEE 754 makes exact, must be bit-identical (signed zeros too); the
transcendental functions within a few ulp, with nan, infinities and zeros exact.

Run them on the copied link, where the device path really runs::

    HOSTARRAY_LINK=copied python3 -m pytest tests/device_compute/test_device_elementwise.py

On a shared link the device path never runs (by design): the same tests then assert
that nothing ran on the device and still compare values.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hostarray as ha
from hostarray._api.elementwise import TABLE, UNARY
from tests._device_helpers import C_TYPES, f32_host, f32_newest, host_path, launch_over, newest_on

pytestmark = pytest.mark.device

HPA = ha.HostPtrArray
DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float32", "float64")
INTS = DTYPES[1:9]
FLOATS = ("float32", "float64")
# the functions IEEE 754 (or integer arithmetic) makes exact: bit-identical results
EXACT = {"abs", "add", "ceil", "conj", "copysign", "divide", "equal", "floor", "floor_divide",
         "greater", "greater_equal", "imag", "isfinite", "isinf", "isnan", "less",
         "less_equal", "logical_and", "logical_not", "logical_or", "logical_xor", "maximum",
         "minimum", "multiply", "negative", "nextafter", "not_equal", "positive", "real",
         "reciprocal", "remainder", "round", "sign", "signbit", "sqrt", "square", "subtract",
         "trunc", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_invert",
         "bitwise_left_shift", "bitwise_right_shift"}
MAX_ULP = {"float16": 1, "float32": 4, "float64": 4}
NAMES = [row[0] for row in TABLE if row[0] != "clip"]  # clip has no device path here
ARITY = {row[0]: 1 if row[2] == UNARY else 2 for row in TABLE}


def explore(thorough: bool, n: int, body: Callable[[st.DataObject], None]) -> None:
    """Run ``body`` on ``n`` hypothesis examples (10x under ``--thorough``).  Each example
    compiles a kernel or two (~0.1 s on PoCL), so ``n`` bounds the test's time."""
    given(data=st.data())(settings(max_examples=n * (10 if thorough else 1), deadline=None,
                                   database=None, suppress_health_check=list(HealthCheck))(body))()


# operators: (dunder, namespace function)
BINARY_OPS = [(ops[0], name) for name, _, p, ops, _ in TABLE if p != UNARY and ops]
REFLECTED_OPS = [(ops[1], name) for name, _, p, ops, _ in TABLE if p != UNARY and len(ops) > 1]
INPLACE_OPS = [(ops[2], name) for name, _, p, ops, _ in TABLE if p != UNARY and len(ops) > 2]
UNARY_OPS = [(ops[0], name) for name, _, p, ops, _ in TABLE if p == UNARY and ops]


# -- fixtures -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dev(cl_device: ha.Device) -> Iterator[ha.Device]:
    """The OpenCL device, with the device path on for every size."""
    old = ha.set_device_compute_threshold(0)
    try:
        yield cl_device
    finally:
        ha.set_device_compute_threshold(old)


@pytest.fixture(scope="module")
def on_device(dev: ha.Device) -> bool:
    """Whether the device path runs here: a mapped or copied link (never on a shared one)."""
    return dev.link in ("mapped", "copied")


_TOUCH: dict[tuple[Any, str], Any] = {}
_C = {**C_TYPES, "complex64": "float2", "complex128": "double2"}


def _touch(dev: ha.Device, x: Any) -> None:
    """Run a kernel that reads and writes every element of ``x`` (then its newest data
    is on ``dev``)."""
    name = x.dtype.name
    prg = _TOUCH.get((dev, name))
    if prg is None:
        if name == "float16":  # no half arithmetic needed: load and store as float
            body = "if (i < n) vstore_half(vload_half(i, x), i, x);"
            t = "half"
        else:
            t, body = _C[name], "if (i < n) x[i] = x[i];"
        head = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if "double" in t else ""
        src = (f"{head}__kernel void touch(__global {t} *x, const ulong n) {{ "
               f"int i = get_global_id(0); {body} }}")
        prg = _TOUCH[(dev, name)] = ha.Program(src, device=dev)
    launch_over(prg.touch, max(x.size, 1), x)


def device_newest(dev: ha.Device, a: np.ndarray) -> Any:
    """A copy of ``a`` on ``dev`` whose newest data is on the device."""
    x = ha.asarray(np.array(a), device=dev, copy=True)
    if x.size:
        _touch(dev, x)
        assert x._s.host_stale
    return x


def on_dev(dev: ha.Device, a: np.ndarray) -> Any:
    """A copy of ``a`` on ``dev`` whose newest data is on the host."""
    return ha.asarray(np.array(a), device=dev, copy=True)


def host_array(a: np.ndarray) -> Any:
    """A copy of ``a`` on the host (the host path's operand)."""
    return ha.asarray(np.array(a), copy=True)


# -- values ---------------------------------------------------------------------------------

def specials(dt: str) -> list[Any]:
    """The values where implementations differ most: extremes, signed zeros, nan, infinities,
    subnormals, shift widths, values near rounding ties."""
    d = np.dtype(dt)
    if d.kind == "b":
        return [True, False]
    if d.kind in "iu":
        i = np.iinfo(d)
        v = [0, 1, 2, 3, 5, 7, 8, 63, 64, 100, -1, -2, -3, -7, -8, -64, i.min, i.min + 1,
             i.max, i.max - 1, d.itemsize * 8, d.itemsize * 8 - 1, d.itemsize * 8 + 1]
        return [x for x in v if i.min <= x <= i.max]
    f = np.finfo(d)
    return [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 2.0, 3.0, -7.0, 0.1, 0.99, 10.0,
            np.nan, np.inf, -np.inf, float(f.tiny), float(f.smallest_subnormal),
            -float(f.smallest_subnormal) * 3, float(f.max), -float(f.max), float(f.eps)]


def elements(dt: str) -> st.SearchStrategy[Any]:
    """Values of ``dt``: its special values half of the time, any value otherwise."""
    return st.one_of(st.sampled_from(specials(dt)), hnp.from_dtype(np.dtype(dt)))


def grid(dt: str) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of ``dt``'s special values (two 1-d arrays)."""
    v = np.array(specials(dt), dtype=dt)
    return np.repeat(v, len(v)), np.tile(v, len(v))


def py_scalars(dt: str) -> st.SearchStrategy[Any]:
    """Python scalars to combine with a ``dt`` array: bool, int (also out of ``dt``'s range:
    the host path raises) and float, special values included."""
    return st.one_of(st.booleans(), st.sampled_from([0, 1, 2, -1, 3, 7, 64, 127, 128, 255, 256,
                                                     -129, 2**31, -2**31, 2**63 - 1, 2**63,
                                                     -2**63, 2**64]),
                     st.sampled_from([0.0, -0.0, 0.5, -1.5, 2.0, 1e300, float("nan"),
                                      float("inf"), -float("inf"), 5e-324]),
                     st.integers(-300, 300), st.floats(width=64))


# -- comparing ------------------------------------------------------------------------------

def outcome(f: Callable[..., Any], *args: Any) -> Any:
    """``f(*args)``, or the exception it raised."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            try:
                return f(*args)
            except Exception as e:  # noqa: BLE001 - the host path's error is the expectation
                return e


def assert_same(got: np.ndarray, want: np.ndarray, exact: bool,
                scale: np.ndarray | None = None) -> None:
    """``got`` is ``want``: the data type and shape; bit-identical values (signed zeros
    too) where ``exact``, else within :data:`MAX_ULP` with nan, infinities and zeros exact
    (or, where ``scale`` is given, within :data:`MAX_ULP` ulp of ``scale``: the absolute
    error of a result that cancels)."""
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape,
                                                                want.dtype, want.shape)
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg="nan where numpy gives nan")
    g, w = got[~nan], want[~nan]
    pinned = ~np.isfinite(w) | (w == 0) if not exact else np.ones(w.shape, bool)
    np.testing.assert_array_equal(g[pinned], w[pinned])
    np.testing.assert_array_equal(np.signbit(g[pinned]), np.signbit(w[pinned]),
                                  err_msg="the sign (of a zero)")
    if exact:
        return
    g, w = g[~pinned], w[~pinned]
    n = MAX_ULP[got.dtype.name]
    if scale is not None:
        sc = np.broadcast_to(scale, got.shape)[~nan][~pinned]
        with np.errstate(over="ignore", invalid="ignore"):  # an infinite operand
            near = np.abs(g - w) <= n * np.spacing(np.maximum(np.abs(sc), np.abs(w)))
        g, w = g[~near], w[~near]
    np.testing.assert_array_max_ulp(g, w, maxulp=n)


def _dtype_of(x: Any) -> np.dtype | None:
    return np.dtype(x.dtype) if isinstance(x, HPA) else None


# numpy's ufunc of each binary function (its loop types)
UFUNCS = {name: fn for name, fn, p, _, _ in TABLE if isinstance(fn, np.ufunc) and p != UNARY}
UFUNCS["floor_divide"] = np.floor_divide


def stays_on_host(name: str, operands: tuple[Any, ...], result: np.ndarray) -> bool:
    """Whether the device path hands ``name`` on ``operands`` to the host (see "What stays
    on the host" in :mod:`hostarray._compute.elementwise`)."""
    dts = [d for d in map(_dtype_of, operands) if d is not None]
    if any(d.kind == "c" or d.itemsize == 2 and d.kind == "f" for d in [*dts, result.dtype]):
        return True  # complex and float16 data (also the float16 results of int8/uint8/bool)
    if name == "reciprocal" and result.dtype.kind in "iu":
        return True
    if name == "pow" and result.dtype.kind in "iu":
        b = operands[1]
        if isinstance(b, HPA) and _dtype_of(b).kind == "i" or not isinstance(b, HPA) and b < 0:
            return True  # numpy's error depends on the exponents' values
    ints = [x for x in operands if type(x) is int]
    if ints and dts:  # Python ints outside numpy's loop type: numpy raises or compares by value
        types = [np.dtype(x.dtype) if isinstance(x, HPA) else
                 np.dtype(bool) if type(x) is bool else type(x) for x in operands]
        loop = UFUNCS[name].resolve_dtypes((*types, None))[0]
        if loop.kind == "f":
            return False  # a float loop converts any int as numpy does (or raises as it does)
        if any(not -2**63 <= x < 2**63 for x in ints):
            return True  # numpy raises or not by the loop it picks
        if loop.kind in "iu" and not all(np.iinfo(loop).min <= x <= np.iinfo(loop).max
                                         for x in ints):
            return True
    return False


def check(dev: ha.Device, on_device: bool, name: str, f: Callable[..., Any],
          dev_args: tuple[Any, ...], host_args: tuple[Any, ...], exact: bool | None = None,
          inplace: bool = False, reflected: bool = False) -> None:
    """``f(*dev_args)`` (device-newest operands) equals ``f(*host_args)`` (the host path),
    or raises the same error; and it ran where it should (``reflected``: ``f`` computes
    ``name(dev_args[1], dev_args[0])``)."""
    ha.reset_stats()
    got = outcome(f, *dev_args)
    s = ha.stats()
    want = outcome(f, *host_args)
    if isinstance(want, Exception):
        assert type(got) is type(want) and str(got) == str(want), (got, want)
        return
    assert not isinstance(got, Exception), got
    if inplace:
        got, want = dev_args[0], host_args[0]
    w = np.asarray(want)
    if not on_device:
        assert s.device_ops == 0 and s.host_fallbacks == 0, s
    elif stays_on_host(name, dev_args[::-1] if reflected else dev_args, w) or any(
            isinstance(x, HPA) and x.size == 0 for x in dev_args):
        assert s.device_ops == 0 and s.host_fallbacks == 1, s
    else:
        assert s.device_ops == 1 and s.host_fallbacks == 0, (name, s)
        assert s.bytes_acquired == 0 and s.acquires == 0, s
        assert got.device == dev and got._s.host_stale  # the newest data is on the device
    scale = None
    if name == "logaddexp":  # a + log1p(exp(b - a)) cancels where the result is near 0
        scale = np.maximum(*(np.abs(np.asarray(x, dtype=w.dtype)) for x in host_args))
    assert_same(np.asarray(got), w, name in EXACT if exact is None else exact, scale)


def operands(draw: st.DrawFn, name: str, dt: str) -> tuple[list[np.ndarray | Any], list[bool]]:
    """Numpy operands (or Python scalars) for ``name`` and which of them are arrays."""
    n = ARITY[name]
    mode = draw(st.sampled_from(["grid", "broadcast", "scalar"] if n == 2 else
                                ["grid", "broadcast"]))
    if mode == "grid":
        a, b = grid(dt)
        extra = draw(hnp.arrays(dt, draw(st.integers(1, 40)), elements=elements(dt)))
        a = np.concatenate([a, extra])
        b = np.concatenate([b, draw(hnp.arrays(dt, a.size - b.size, elements=elements(dt)))])
        return ([a, b] if n == 2 else [a]), [True] * n
    if mode == "broadcast":
        shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=3,
                                                        min_side=1, max_side=4))
        return [draw(hnp.arrays(dt, s, elements=elements(dt)))
                for s in shapes.input_shapes], [True] * n
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=5))
    arr = draw(hnp.arrays(dt, shape, elements=elements(dt)))
    scalar = draw(py_scalars(dt))
    if draw(st.booleans()):
        return [arr, scalar], [True, False]
    return [scalar, arr], [False, True]


# -- every function of the table -----------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_function_matches_host(name: str, dev: ha.Device, on_device: bool,
                               thorough: bool) -> None:
    """Each function on device-newest operands (every pair of special values, broadcast
    shapes, Python scalars on either side) gives the host path's answer."""
    f = getattr(ha, name)

    def body(data: st.DataObject) -> None:
        dt = data.draw(st.sampled_from(DTYPES), label="dtype")
        ops, is_arr = operands(data.draw, name, dt)
        d = tuple(device_newest(dev, x) if a else x for x, a in zip(ops, is_arr))
        h = tuple(host_array(x) if a else x for x, a in zip(ops, is_arr))
        check(dev, on_device, name, f, d, h)

    explore(thorough, 3, body)


# exact integer semantics where C and numpy differ: INT_MIN // -1, x % 0, x // 0, shifts by
# the width or more and by negative amounts, negative powers, wrapping
INT_OPS = ("floor_divide", "remainder", "bitwise_left_shift", "bitwise_right_shift", "pow",
           "multiply", "subtract")


@pytest.mark.parametrize("dt", INTS)
def test_integer_edges(dt: str, dev: ha.Device, on_device: bool) -> None:
    """Every pair of an integer type's special values through the operations C leaves
    undefined or defines unlike numpy."""
    a, b = grid(dt)
    for name in INT_OPS:
        bb = np.abs(b) if name == "pow" else b  # numpy refuses negative powers (by value)
        d = (device_newest(dev, a), device_newest(dev, bb.astype(dt)))
        check(dev, on_device, name, getattr(ha, name), d, (host_array(a), host_array(bb)))
    for name in ("negative", "abs", "square", "bitwise_invert", "sign"):
        check(dev, on_device, name, getattr(ha, name), (device_newest(dev, a),),
              (host_array(a),))


FLOAT_OPS = ("floor_divide", "remainder", "pow", "divide", "nextafter", "copysign", "maximum",
             "minimum", "atan2", "hypot", "logaddexp")


@pytest.mark.parametrize("dt", FLOATS)
def test_float_specials(dt: str, dev: ha.Device, on_device: bool) -> None:
    """Every pair of special floating values (nan, ±inf, ±0, subnormals, the extremes)
    through the binary functions with the most special cases."""
    a, b = grid(dt)
    for name in FLOAT_OPS:
        check(dev, on_device, name, getattr(ha, name), (device_newest(dev, a),
                                                        device_newest(dev, b)),
              (host_array(a), host_array(b)))


@pytest.mark.parametrize("dt", FLOATS)
def test_float_loops_take_any_python_int_numpy_converts(dt: str, dev: ha.Device,
                                                         on_device: bool) -> None:
    """A Python int beyond int64 with a float array: numpy converts it to the float type
    (2**200 is inf in float32; 2**1100 raises OverflowError); the device path and the host
    path take it too (floor_divide's infinity check once refused such an int on the host
    with a TypeError, and the device path sent every such int to the host)."""
    a = np.array([1.0, -1.0, 3.5, -0.0, 7e20], dt)
    for v in (2**64, -2**70, 2**63, 2**200, 2**1100):
        for name in ("floor_divide", "remainder", "add", "less", "multiply"):
            f = getattr(ha, name)
            check(dev, on_device, name, f, (device_newest(dev, a), v), (host_array(a), v))
            check(dev, on_device, name, lambda x, y, f=f: f(y, x), (device_newest(dev, a), v),
                  (host_array(a), v), reflected=True)
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                try:
                    want = getattr(np, name)(a, v)
                except OverflowError:
                    continue
                got = np.asarray(f(host_array(a), v))
                if name == "floor_divide" and np.isinf(np.asarray(v, dt)):
                    want = np.floor(a / np.asarray(v, dt))  # the standard's rule (DEVIATIONS)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


BROADCASTS = [((), (3,)), ((3,), ()), ((), ()), ((3, 1), (1, 4)), ((2, 1, 4), (3, 1)),
              ((1,), (2, 3)), ((4, 1, 1), (1,)), ((2, 3), (2, 3)), ((1, 1), (5, 1))]


@pytest.mark.parametrize("name, dt", [("subtract", "int16"), ("atan2", "float64"),
                                      ("less", "uint8")])
def test_broadcasting(name: str, dt: str, dev: ha.Device, on_device: bool) -> None:
    """0-d operands, size-1 axes and missing axes broadcast as numpy broadcasts them (a
    function that is not symmetric, so a swapped operand shows)."""
    rng = np.random.default_rng(12)
    for s1, s2 in BROADCASTS:
        a = rng.integers(0, 100, s1).astype(dt)
        b = rng.integers(1, 100, s2).astype(dt)
        check(dev, on_device, name, getattr(ha, name), (device_newest(dev, a),
                                                        device_newest(dev, b)),
              (host_array(a), host_array(b)))


def test_unsigned_exponent_arrays(dev: ha.Device, on_device: bool) -> None:
    """Integer powers with unsigned (or bool) exponent arrays run on the device (they can't
    be negative); signed exponent arrays stay on the host (numpy's error is by value)."""
    a = np.array([0, 1, 2, 3, -1, -2, 127, -128], np.int8)
    for e in (np.array([0, 1, 2, 3, 7, 8, 200, 255], np.uint8),
              np.array([True, False] * 4), np.array([0, 1, 2, 3, 4, 5, 6, -1], np.int8)):
        check(dev, on_device, "pow", ha.pow, (device_newest(dev, a), device_newest(dev, e)),
              (host_array(a), host_array(e)))


def test_conversions_to_the_loop_type(dev: ha.Device, on_device: bool) -> None:
    """numpy converts to bool by ``!= 0`` (the logical functions of mixed types take a bool
    loop: 0.5 and 256 are True, a C cast would give 0), and a Python bool is numpy's bool."""
    f = np.array([0.5, 0.0, np.nan, -0.0, 1e-45], np.float32)
    i = np.array([256, 0, 512, -256, 1], np.int16)
    b = np.array([True, False, True, False, True])
    cases = [("logical_and", f, True), ("logical_or", i, b), ("logical_xor", f, i),
             ("logical_and", b, f), ("subtract", i, False), ("add", f, True),
             ("multiply", b, True), ("less", i, True)]
    for name, x, y in cases:
        d = tuple(device_newest(dev, v) if isinstance(v, np.ndarray) else v for v in (x, y))
        h = tuple(host_array(v) if isinstance(v, np.ndarray) else v for v in (x, y))
        check(dev, on_device, name, getattr(ha, name), d, h)


def test_int64_uint64_comparisons(dev: ha.Device, on_device: bool) -> None:
    """Comparisons of int64 with uint64 arrays are exact (numpy's loop keeps both types:
    -1 < 2**64 - 1, 2**63 > 2**63 - 1), in both orders, broadcast."""
    s = np.array([-1, 0, 1, 2**63 - 1, -2**63, 5], np.int64)
    u = np.array([2**64 - 1, 0, 1, 2**63 - 1, 2**63, 4], np.uint64)
    for name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
        f = getattr(ha, name)
        check(dev, on_device, name, f, (device_newest(dev, s), device_newest(dev, u)),
              (host_array(s), host_array(u)))
        check(dev, on_device, name, f, (device_newest(dev, u[:, None]), device_newest(dev, s)),
              (host_array(u[:, None]), host_array(s)))


def test_python_ints_out_of_range(dev: ha.Device, on_device: bool) -> None:
    """A Python int outside the array's type raises numpy's error (OverflowError) as on the
    host, in functions, operators, reflected and in-place operators; comparisons with one
    compare by value (numpy's rule), on the host."""
    i8, u8 = np.array([1, -2, 127], np.int8), np.array([0, 1, 255], np.uint8)
    i64, u64 = np.array([1, -2, 3], np.int64), np.array([0, 1, 2**64 - 1], np.uint64)
    cases: list[tuple[str, Callable[..., Any], np.ndarray, Any]] = [
        ("add", ha.add, i8, 300), ("add", _call("__radd__"), i8, -129),
        ("subtract", _call("__sub__"), u8, -1), ("multiply", ha.multiply, i64, 2**63),
        ("add", ha.add, u64, -1), ("bitwise_and", ha.bitwise_and, u64, 2**64),
        ("add", _inplace("__iadd__"), i8, 128), ("less", ha.less, i8, 1000),
        ("equal", _call("__eq__"), u8, -1), ("greater", ha.greater, u64, -1),
        ("add", ha.add, i8, 127), ("subtract", _call("__rsub__"), u8, 255),
        ("logical_and", ha.logical_and, i8, 2**63), ("logical_or", ha.logical_or, i8, 300),
        ("add", ha.add, np.array([True, False]), 2**63), ("add", ha.add, u64, 2**63),
        ("less", ha.less, i64, 2**63), ("divide", ha.divide, i8, -2**64)]
    for name, f, x, y in cases:
        check(dev, on_device, name, f, (device_newest(dev, x), y), (host_array(x), y),
              inplace=f.__name__ in dict(INPLACE_OPS),
              reflected=f.__name__ in dict(REFLECTED_OPS))


# -- operators -------------------------------------------------------------------------------

def _call(dunder: str) -> Callable[..., Any]:
    def f(x: Any, *y: Any) -> Any:
        return getattr(x, dunder)(*y)
    f.__name__ = dunder
    return f


def test_operators(dev: ha.Device, on_device: bool, thorough: bool) -> None:
    """Binary operators with arrays (broadcast) or Python scalars, reflected operators with a
    Python scalar on the left, and unary operators give the host path's answer."""

    def body(data: st.DataObject) -> None:
        kind = data.draw(st.sampled_from(["binary", "reflected", "unary"]), label="kind")
        dt = data.draw(st.sampled_from(DTYPES), label="dtype")
        table = {"binary": BINARY_OPS, "reflected": REFLECTED_OPS, "unary": UNARY_OPS}[kind]
        dunder, name = data.draw(st.sampled_from(table), label="operator")
        if kind == "reflected":
            shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=4))
            x = data.draw(hnp.arrays(dt, shape, elements=elements(dt)))
            y = data.draw(py_scalars(dt), label="scalar")
            f = _call(dunder)  # x.__rsub__(y) is y - x
            check(dev, on_device, name, f, (device_newest(dev, x), y), (host_array(x), y),
                  reflected=True)
            return
        ops, is_arr = operands(data.draw, name if kind == "binary" else "negative", dt)
        if not is_arr[0]:
            ops, is_arr = ops[::-1], is_arr[::-1]  # self is the array
        newest = data.draw(st.sampled_from([(True, True), (True, False), (False, True)]),
                           label="device-newest") if is_arr == [True, True] else (True, True)
        d = tuple((device_newest if n else on_dev)(dev, x) if a else x
                  for x, a, n in zip(ops, is_arr, newest))
        h = tuple(host_array(x) if a else x for x, a in zip(ops, is_arr))
        # the operand order the device sees: (self, other)
        check(dev, on_device, name, _call(dunder), d, h)

    explore(thorough, 40, body)


def _inplace(dunder: str) -> Callable[..., Any]:
    def f(x: Any, y: Any) -> Any:
        r = getattr(x, dunder)(y)
        if r is NotImplemented:
            raise TypeError("NotImplemented")
        assert r is x
        return r
    f.__name__ = dunder
    return f


def test_inplace_operators(dev: ha.Device, on_device: bool, thorough: bool) -> None:
    """``x op= y`` with an array of any (broadcastable) type or a Python scalar: the same
    values in ``x``, the same casting rule (numpy's ``same_kind``) and the same errors."""

    def body(data: st.DataObject) -> None:
        dunder, name = data.draw(st.sampled_from(INPLACE_OPS), label="operator")
        dt = data.draw(st.sampled_from(DTYPES), label="dtype of x")
        shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=4))
        x = data.draw(hnp.arrays(dt, shape, elements=elements(dt)))
        if data.draw(st.booleans(), label="array operand"):
            dt2 = data.draw(st.sampled_from(DTYPES), label="dtype of y")
            s2 = data.draw(hnp.broadcastable_shapes(shape, min_dims=0, max_dims=len(shape)))
            y: Any = data.draw(hnp.arrays(dt2, s2, elements=elements(dt2)))
            # x or y may be host-current on the device (a small one is published, not acquired)
            which = data.draw(st.sampled_from(["both", "x", "y"]), label="device-newest")
            d = (device_newest(dev, x) if which != "y" else on_dev(dev, x),
                 device_newest(dev, y) if which != "x" else on_dev(dev, y))
            h = (host_array(x), host_array(y))
        else:
            y = data.draw(py_scalars(dt), label="scalar")
            d, h = (device_newest(dev, x), y), (host_array(x), y)
        check(dev, on_device, name, _inplace(dunder), d, h, inplace=True)

    explore(thorough, 40, body)


def test_inplace_casting_rules(dev: ha.Device, on_device: bool) -> None:
    """In-place results are cast to ``x``'s type by numpy's ``same_kind`` rule: float64 into
    float32 rounds, int16 into uint8 wraps; float into an integer array is an error."""
    cases = [("__iadd__", "add", np.float32, np.array([1e-8, 0.1, 1e39, -0.0], np.float64)),
             ("__iadd__", "add", np.uint8, np.array([-1, 100, -128, 127], np.int8)),
             ("__imul__", "multiply", np.int8, np.array([3, 3, 3, 3], np.int64)),
             ("__iadd__", "add", np.int16, np.array([0.5, 1, 2, 3], np.float32)),
             ("__iadd__", "add", np.int8, 1.5), ("__itruediv__", "divide", np.int32, 2),
             ("__isub__", "subtract", np.bool_, True), ("__iadd__", "add", np.int8, 300),
             ("__iadd__", "add", np.uint8, -1), ("__ipow__", "pow", np.int8, -1),
             ("__ilshift__", "bitwise_left_shift", np.int8, np.array([1, 8, 9, 100], np.uint8))]
    for dunder, name, dt, y in cases:
        x = np.array([1, 2, 100, 7], dt)
        if isinstance(y, np.ndarray):
            d, h = (device_newest(dev, x), device_newest(dev, y)), (host_array(x), host_array(y))
        else:
            d, h = (device_newest(dev, x), y), (host_array(x), y)
        check(dev, on_device, name, _inplace(dunder), d, h, inplace=True)


def test_inplace_aliasing(dev: ha.Device, on_device: bool) -> None:
    """``x += x`` (the same elements: on the device) and ``x[1:] += x[:-1]`` (overlapping,
    shifted elements: numpy's answer, as if the operand were read first)."""
    a = np.arange(10, dtype=np.int32) * 3 - 7
    x, h = device_newest(dev, a), host_array(a)
    ha.reset_stats()
    x += x
    h += h
    if on_device:
        assert ha.stats().device_ops == 1
    np.testing.assert_array_equal(np.asarray(x), np.asarray(h))
    x, h = device_newest(dev, a), host_array(a)
    xv, hv = x[1:], h[1:]
    xv += x[:-1]
    hv += h[:-1]
    expect = a.copy()
    expect[1:] += a[:-1].copy()
    np.testing.assert_array_equal(np.asarray(h), expect)
    np.testing.assert_array_equal(np.asarray(x), expect)
    x, h = device_newest(dev, a), host_array(a)
    xv, hv = x[:-1], h[:-1]
    xv -= x[1:]
    hv -= h[1:]
    np.testing.assert_array_equal(np.asarray(x), np.asarray(h))
    x, h = device_newest(dev, a), host_array(a)  # reversed view onto itself
    xv, hv = x[::-1], h[::-1]
    xv *= x
    hv *= h
    np.testing.assert_array_equal(np.asarray(x), np.asarray(h))


# -- views -----------------------------------------------------------------------------------

VIEWS: dict[str, tuple[Callable[[tuple[int, int]], tuple[int, ...]], Callable[[Any], Any]]] = {
    # name: (base shape from the view's 2-d shape, the view of the base)
    "step": (lambda s: (s[0], 2 * s[1]), lambda b: b[:, ::2]),
    "offset step": (lambda s: (s[0] + 1, 3 * s[1]), lambda b: b[1:, 1::3]),
    "transpose": (lambda s: (s[1], s[0]), lambda b: b.T),
    "reversed": (lambda s: s, lambda b: b[::-1, ::-1]),
    "column": (lambda s: (s[1], 3), lambda b: b[:, 1]),  # 1-d: broadcasts along axis 0
    "row": (lambda s: (3, s[1]), lambda b: b[1]),
}


def test_views(dev: ha.Device, on_device: bool, thorough: bool) -> None:
    """Operands and in-place targets that are views (steps, offsets, transposes, negative
    strides, a column or a row of a matrix)."""

    def body(data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(["add", "multiply", "less", "sin", "maximum",
                                          "floor_divide", "bitwise_xor", "sqrt"]), label="name")
        dt = data.draw(st.sampled_from(DTYPES), label="dtype")
        shape = (data.draw(st.integers(1, 4)), data.draw(st.integers(1, 5)))
        n = ARITY[name]
        vs = [data.draw(st.sampled_from(sorted(VIEWS)), label=f"view {k}") for k in range(n)]
        d, h = [], []
        for v in vs:
            base_shape, view = VIEWS[v]
            base = data.draw(hnp.arrays(dt, base_shape(shape), elements=elements(dt)))
            db, hb = device_newest(dev, base), host_array(base)
            d.append(view(db))
            h.append(view(hb))
        check(dev, on_device, name, getattr(ha, name), tuple(d), tuple(h))
        if n == 2 and data.draw(st.booleans(), label="in place"):
            ops = {row[0]: row[3] for row in TABLE}[name]
            if len(ops) > 2:  # comparisons have no in-place operator
                check(dev, on_device, name, _inplace(ops[2]), tuple(d), tuple(h), inplace=True)

    explore(thorough, 24, body)


# -- what stays on the host -------------------------------------------------------------------

def test_host_fallbacks(dev: ha.Device, on_device: bool) -> None:
    """Complex and float16 operands (and float16 results) are computed on the host, counted
    as host fallbacks, with the host path's answer."""
    cases = [(ha.add, [np.array([1 + 2j, -0.5j], np.complex64)] * 2),
             (ha.exp, [np.array([1j, 0.5], np.complex128)]),
             (ha.multiply, [np.array([1.5, -2], np.float16), np.array([3, 0.25], np.float16)]),
             (ha.sqrt, [np.array([4, 2], np.float16)]),
             (ha.sin, [np.array([1, -2], np.int8)])]  # numpy's loop: float16
    for f, args in cases:
        d = tuple(device_newest(dev, a) for a in args)
        h = tuple(host_array(a) for a in args)
        check(dev, on_device, f.__name__, f, d, h)
        if on_device:
            assert ha.stats().host_fallbacks == 1


def test_host_current_arrays_skip_the_device_check(dev: ha.Device) -> None:
    """Operations on host-current arrays never consult the placement rule (one flag test per
    operand): the dispatch overhead of the host path is unchanged."""
    import hostarray._placement as compute

    x = ha.asarray(np.arange(8, dtype=np.float32), device=dev, copy=True)
    y = ha.asarray(np.arange(8, dtype=np.float32), copy=True)
    calls: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_name in ("target", "try_device", "_device",
                                                         "elementwise"):
            calls.append(frame.f_code.co_name)

    assert compute.target is not None
    ha.reset_stats()
    sys.setprofile(profile)
    try:
        for z in (x, y):
            _ = z + 1.0, 2.0 * z, -z, ha.sin(z), ha.add(z, z), z < z
            z += 1.0
    finally:
        sys.setprofile(None)
    assert calls == []
    assert ha.stats().device_ops == 0 and ha.stats().host_fallbacks == 0


# -- pow's special cases and x ** -1 as on the host ------------------------------------------------

@pytest.mark.usefixtures("off_shared")  # the device path runs (as HOSTARRAY_LINK=copied)
def test_pow_half_special_values_match_host(dev: ha.Device) -> None:
    # numpy computes x ** 0.5 as sqrt: (-inf) ** 0.5 is nan, (-0.0) ** 0.5 is -0.0; the device
    # path's pow gives +inf and +0.0
    vals = [-np.inf, -0.0, 4.0]
    x = f32_newest(dev, np.array(vals))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = np.asarray(x ** 0.5)
    exp = f32_host(lambda a: a ** 0.5, vals)
    np.testing.assert_array_equal(got, exp)
    number = ~np.isnan(exp)  # a NaN's sign is left open (IEEE 754; numpy's differs by CPU)
    np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(exp[number]))


@pytest.mark.usefixtures("off_shared")  # the device path runs (as HOSTARRAY_LINK=copied)
def test_pow_minus_one_is_the_exact_reciprocal_as_on_host(dev: ha.Device) -> None:
    # numpy computes x ** -1 as 1 / x (correctly rounded); 1 / x on the device is exact too,
    # but x ** -1 goes through pow and is off in the last bit (3.5 ** -1: 0.28571427 vs 0.2857143)
    vals = [3.5, 7.0, 2.5]
    x = f32_newest(dev, np.array(vals))
    np.testing.assert_array_equal(np.asarray(x ** -1), f32_host(lambda a: a ** -1, vals))


# -- in-place operators: an overlapping operand stays on the device, a casting error moves nothing

@pytest.mark.usefixtures("off_shared")  # the device path runs (as HOSTARRAY_LINK=copied)
@pytest.mark.parametrize("op", ["x -= x[3]", "x /= x[0]", "x[1:] += x[:-1]", "x[:-1] += x[1:]",
                                "x[::2] *= x[1::2]", "x[::-1] += x"])
def test_in_place_with_an_overlapping_operand_stays_on_the_device(dev: ha.Device, op: str) -> None:
    # an overlapping view operand (x[1:] += x[:-1]) fell back to the host and acquired all of
    # x; it is now copied on the device first, as numpy copies it.  x[3] is an element copy
    # (docs/coherence.md): it moves that element's bytes, not the array
    a = np.arange(1, 65, dtype=np.float32)
    x, m = f32_newest(dev, a), f32_host(lambda v: v, a)
    ha.reset_stats()
    exec(op, {"x": x})
    exec(op, {"x": m})
    s = ha.stats()
    if dev.link in ("mapped", "copied"):
        element_bytes = x.itemsize if op in ("x -= x[3]", "x /= x[0]") else 0
        assert s.host_fallbacks == 0 and s.bytes_acquired == element_bytes, s
        assert s.device_ops >= (1 if element_bytes else 2), s
    np.testing.assert_array_equal(np.asarray(x), m)


@pytest.fixture
def copied(cl_device: ha.Device) -> Iterator[ha.Device]:
    """``cl_device`` with the buffers made inside on the copied link (the device path runs
    there in both CI passes; on a shared link the host path acquires first, by design)."""
    from hostarray.bench import forced_link

    with forced_link(cl_device, "copied"):
        yield cl_device
    ha.clear_pool()


def test_inplace_casting_error_moves_nothing_and_is_no_fallback(copied,
                                                               device_path) -> None:
    x = newest_on(copied, np.arange(10), "int32")
    ha.reset_stats()
    with pytest.raises(TypeError):
        x += 1.5
    s = ha.stats()
    assert np.array_equal(np.asarray(x), np.arange(10))
    assert s.host_fallbacks == 0 and s.acquires == 0, s


def test_inplace_casting_error_under_disallow_is_the_casting_error(copied,
                                                                  device_path) -> None:
    # numpy's casting error (a TypeError) comes before any transfer the guard could refuse
    x = newest_on(copied, np.arange(10), "int32")
    with pytest.raises(TypeError), ha.transfer_guard("disallow"):
        x += 1.5
    assert np.array_equal(np.asarray(x), np.arange(10))


# -- more than 32 dimensions (numpy 2 takes up to 64): computed as on the host ---------------------

@pytest.mark.parametrize("op", ["x+1", "x+x", "-x", "where", "clip", "vecdot", "iadd",
                                "setitem"])
def test_elementwise_over_32_dims(cl_device, device_path, op) -> None:
    shape = (1,) * 33 + (3,)
    fns = {"x+1": lambda x: x + 1, "x+x": lambda x: x + x, "-x": lambda x: -x,
           "where": lambda x: ha.where(x > 0, x, 0), "clip": lambda x: ha.clip(x, min=1),
           "vecdot": lambda x: ha.vecdot(x, x), "iadd": lambda x: x.__iadd__(1),
           "setitem": lambda x: (x.__setitem__(..., newest_on(cl_device, np.ones(shape), "int32")),
                                  x)[1]}
    x = newest_on(cl_device, np.arange(3).reshape(shape), "int32")
    host = np.asarray(host_path(lambda: fns[op](newest_on(cl_device, np.arange(3).reshape(shape),
                                                           "int32"))))
    got = np.asarray(fns[op](x))
    assert got.shape == host.shape and np.array_equal(got, host)


# numpy's floating-point warnings and np.errstate are not followed on the device, by design
# (docs/device-compute.md, "Where the two paths differ"): no test asserts them here.
