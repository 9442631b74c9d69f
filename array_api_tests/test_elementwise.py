"""Elementwise functions: differential against array_api_strict, result dtypes against the
standard's promotion table, Python-scalar operands, results on the inputs' device.

The IEEE special cases each function's page lists are in ``test_special_cases.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hostarray as ha

from . import strategies as strat
from .helpers import HOST, assert_like, assert_values, differential, ha_fn, tame_complex, to_strict

# name -> (input kind the spec names, result dtype rule)
# rules: "promoted" (type promotion), "bool", "same", "real" (complex -> its real dtype)
UNARY: dict[str, tuple[str, str]] = {
    "abs": ("numeric", "real"), "acos": ("floating", "same"), "acosh": ("floating", "same"),
    "asin": ("floating", "same"), "asinh": ("floating", "same"), "atan": ("floating", "same"),
    "atanh": ("floating", "same"), "bitwise_invert": ("integer or boolean", "same"),
    "ceil": ("real", "same"), "conj": ("numeric", "same"), "cos": ("floating", "same"),
    "cosh": ("floating", "same"), "exp": ("floating", "same"), "expm1": ("floating", "same"),
    "floor": ("real", "same"), "imag": ("complex floating", "real"),
    "isfinite": ("numeric", "bool"), "isinf": ("numeric", "bool"),
    "isnan": ("numeric", "bool"), "log": ("floating", "same"), "log1p": ("floating", "same"),
    "log2": ("floating", "same"), "log10": ("floating", "same"),
    "logical_not": ("bool", "bool"), "negative": ("numeric", "same"),
    "positive": ("numeric", "same"), "real": ("numeric", "real"),
    "reciprocal": ("floating", "same"), "round": ("numeric", "same"),
    "sign": ("numeric", "same"), "signbit": ("real floating", "bool"),
    "sin": ("floating", "same"), "sinh": ("floating", "same"), "square": ("numeric", "same"),
    "sqrt": ("floating", "same"), "tan": ("floating", "same"), "tanh": ("floating", "same"),
    "trunc": ("real", "same"),
}
BINARY: dict[str, tuple[str, str]] = {
    "add": ("numeric", "promoted"), "atan2": ("real floating", "promoted"),
    "bitwise_and": ("integer or boolean", "promoted"),
    "bitwise_left_shift": ("integer", "promoted"),
    "bitwise_or": ("integer or boolean", "promoted"),
    "bitwise_right_shift": ("integer", "promoted"),
    "bitwise_xor": ("integer or boolean", "promoted"),
    "copysign": ("real floating", "promoted"), "divide": ("floating", "promoted"),
    "equal": ("any", "bool"), "floor_divide": ("real", "promoted"),
    "greater": ("real", "bool"), "greater_equal": ("real", "bool"),
    "hypot": ("real floating", "promoted"), "less": ("real", "bool"),
    "less_equal": ("real", "bool"), "logaddexp": ("real floating", "promoted"),
    "logical_and": ("bool", "bool"), "logical_or": ("bool", "bool"),
    "logical_xor": ("bool", "bool"), "maximum": ("real", "promoted"),
    "minimum": ("real", "promoted"), "multiply": ("numeric", "promoted"),
    "nextafter": ("real floating", "same"), "not_equal": ("any", "bool"),
    "pow": ("numeric", "promoted"), "remainder": ("real", "promoted"),
    "subtract": ("numeric", "promoted"),
}

# Where numpy (and so array_api_strict) departs from the spec's special cases, the differential
# run draws finite values only; test_special_cases.py checks those inputs against the spec.
FINITE_ONLY = {"floor_divide", "remainder"}


def _complex_bounds(dt: np.dtype) -> dict:
    # numpy's complex results at special values and on overflow (e.g. expm1(89+0j) in
    # complex64 gives inf+nanj, where the exact result is inf+0j; sign(1e-45j) gives nan+nanj
    # where z/|z| is 1j) differ from the spec; special values are in test_special_cases.py
    return (dict(finite=True, min_value=-20, max_value=20, subnormal=False)
            if dt.kind == "c" else {})


def expected_dtype(rule: str, d1: np.dtype, d2: np.dtype | None = None) -> np.dtype:
    if rule == "bool":
        return np.dtype(bool)
    if rule == "same":
        return d1
    if rule == "real":
        return np.dtype(f"float{d1.itemsize * 4}") if d1.kind == "c" else d1
    r = strat.promote(d1, d2)
    assert r is not None
    return r


def _prepare_binary(name: str, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if name.startswith("bitwise_") and "shift" in name:
        b = np.asarray(np.clip(b, 0, 7), dtype=b.dtype)  # the spec wants 0 <= x2 < bits
    if name == "pow" and b.dtype.kind in "iu":
        b = np.asarray(np.clip(b, 0, 5), dtype=b.dtype)  # integer ** negative: not defined
    return a, b


@pytest.mark.parametrize("name", sorted(UNARY))
@given(data=st.data())
def test_unary(name: str, data) -> None:
    kind, rule = UNARY[name]
    dt = data.draw(strat.dtypes(kind), label="dtype")
    x = data.draw(strat.arrays(dt, **_complex_bounds(dt)), label="x")
    got = differential(name, x)
    assert got.dtype == expected_dtype(rule, dt)


@pytest.mark.parametrize("name", sorted(BINARY))
@given(data=st.data())
def test_binary(name: str, data) -> None:
    kind, rule = BINARY[name]
    a, b = data.draw(strat.binary_arrays(kind, finite=name in FINITE_ONLY,
                                         same_dtype=name == "nextafter"), label="x1, x2")
    a, b = tame_complex(a), tame_complex(b)
    a, b = _prepare_binary(name, a, b)
    got = differential(name, a, b)
    assert got.dtype == expected_dtype(rule, a.dtype, b.dtype)
    assert got.shape == np.broadcast_shapes(a.shape, b.shape)


@pytest.mark.parametrize("name", sorted(BINARY))
@given(data=st.data())
def test_binary_python_scalar(name: str, data) -> None:
    # 2024.12+: one operand may be a Python scalar; the result has the array's dtype
    kind, rule = BINARY[name]
    dt = data.draw(strat.dtypes(kind), label="dtype")
    a = data.draw(strat.arrays(dt, finite=True), label="x")
    s = data.draw(strat.python_scalars(dt), label="scalar")
    if "shift" in name:
        s = min(abs(s), 7)
    if name == "pow" and dt.kind in "iu":
        s = min(abs(s), 5)
    a, s = tame_complex(a), tame_complex(s)
    scalar_first = data.draw(st.booleans(), label="scalar first")
    args = (s, a) if scalar_first else (a, s)
    if name.startswith("bitwise_") and "shift" in name and scalar_first:
        args = (s, np.asarray(np.clip(a, 0, 7), dtype=dt))
    got = differential(name, *args)
    assert got.dtype == expected_dtype(rule, dt, dt)
    assert got.shape == a.shape


@given(data=st.data())
def test_clip_differential(data) -> None:
    dt = data.draw(strat.dtypes("real"), label="dtype")
    x = data.draw(strat.arrays(dt, finite=dt.kind == "f"), label="x")
    lo = data.draw(st.none() | strat.python_scalars(dt), label="min")
    hi = data.draw(st.none() | strat.python_scalars(dt), label="max")
    use_arrays = data.draw(st.booleans(), label="min/max as arrays")
    if use_arrays and lo is not None and hi is not None:
        lo, hi = np.asarray(lo, dtype=dt), np.asarray(hi, dtype=dt)
    got = differential("clip", x, min=lo, max=hi)
    assert got.dtype == dt  # clip keeps x's dtype


@pytest.mark.parametrize("name", ["add", "multiply", "subtract", "divide", "pow", "maximum",
                                  "copysign", "atan2", "hypot", "logaddexp"])
def test_promotion_table(name: str) -> None:
    # every pair of dtypes the table defines, for the function's input kind
    kind, rule = BINARY[name]
    f = ha_fn(name)
    names = strat.KINDS[kind]
    for d1 in names:
        for d2 in strat.promotable(d1, names):
            x1 = ha.asarray(np.ones(2, dtype=d1))
            x2 = ha.asarray(np.ones((3, 1), dtype=d2))
            r = f(x1, x2)
            assert r.dtype == strat.promote(d1, d2), f"{name}({d1}, {d2}) -> {r.dtype}"
            assert r.shape == (3, 2)


@pytest.mark.parametrize("name", ["equal", "less", "logical_and", "bitwise_xor"])
def test_comparison_and_logical_dtypes(name: str) -> None:
    kind, rule = BINARY[name]
    f = ha_fn(name)
    for d1 in strat.KINDS[kind]:
        for d2 in strat.promotable(d1, strat.KINDS[kind]):
            r = f(ha.asarray(np.zeros(3, d1)), ha.asarray(np.zeros(3, d2)))
            assert r.dtype == expected_dtype(rule, np.dtype(d1), np.dtype(d2))


@pytest.mark.device
@pytest.mark.parametrize("name", ["sqrt", "negative", "isnan", "round", "abs"])
@given(data=st.data())
def test_unary_on_device(name: str, cl_device, data) -> None:
    x = data.draw(strat.arrays(strat.dtypes(UNARY[name][0]), min_dims=1, min_side=1),
                  label="x")
    differential(name, x, _device=cl_device)


@pytest.mark.device
@pytest.mark.parametrize("name", ["add", "multiply", "less", "maximum", "pow"])
@given(data=st.data())
def test_binary_on_device(name: str, cl_device, data) -> None:
    a, b = _prepare_binary(name, *data.draw(strat.binary_arrays(BINARY[name][0], max_dims=2),
                                            label="x1, x2"))
    if a.dtype.kind == "c" or b.dtype.kind == "c":
        a, b = np.nan_to_num(a), np.nan_to_num(b)
    differential(name, a, b, _device=cl_device)


@pytest.mark.device
def test_device_result_after_kernel_write(cl_device) -> None:
    # the namespace reads through the coherence hooks: a kernel's write is seen by ha.add
    x = ha.zeros(16, dtype=ha.float32, device=cl_device)
    prog = ha.Program("__kernel void fill(__global float *a) { a[get_global_id(0)] = 2.5f; }",
                      device=cl_device)
    prog.fill((16,), x)
    r = ha_fn("add")(x, x)
    assert r.device == cl_device
    np.testing.assert_array_equal(np.asarray(r), np.full(16, 5.0, np.float32))


def test_results_are_new_arrays() -> None:
    x = ha.asarray(np.arange(4.0))
    r = ha_fn("positive")(x)
    assert isinstance(r, ha.HostPtrArray)
    assert_like(r, to_strict(np.arange(4.0)), device=HOST)


_FILL_SRC = "__kernel void fill(__global float *a, float v) { a[get_global_id(0)] = v; }"


@pytest.mark.device
@pytest.mark.parametrize("name", sorted(n for n, (k, _) in UNARY.items()
                                        if "float32" in strat.KINDS[k]))
def test_unary_reads_kernel_writes(name: str, cl_device) -> None:
    # input written by a kernel: the function must acquire before computing on the host
    # (under HOSTARRAY_LINK=copied a missing acquire shows as the old zeros)
    x = ha.zeros(8, dtype=ha.float32, device=cl_device)
    ha.Program(_FILL_SRC, device=cl_device).fill((8,), x, np.float32(0.5))
    r = ha_fn(name)(x)
    assert r.device == cl_device
    want = ha_fn(name)(ha.asarray(np.full(8, 0.5, np.float32)))
    # a few ulps, not bitwise: under HOSTARRAY_TEST_DEVICE_COMPUTE=1 r comes from an OpenCL
    # kernel, whose math functions may differ from numpy's in the last bits
    assert_values(np.asarray(r), np.asarray(want), msg=name)


@pytest.mark.device
@pytest.mark.parametrize("name", sorted(n for n, (k, _) in BINARY.items()
                                        if "float32" in strat.KINDS[k]))
def test_binary_reads_kernel_writes(name: str, cl_device) -> None:
    x = ha.zeros(8, dtype=ha.float32, device=cl_device)
    ha.Program(_FILL_SRC, device=cl_device).fill((8,), x, np.float32(0.75))
    y = ha.asarray(np.linspace(-2, 2, 8, dtype=np.float32), device=cl_device)
    r = ha_fn(name)(x, y)
    assert r.device == cl_device
    host = ha_fn(name)(ha.asarray(np.full(8, 0.75, np.float32)),
                       ha.asarray(np.linspace(-2, 2, 8, dtype=np.float32)))
    assert_values(np.asarray(r), np.asarray(host), msg=name)  # ulps: as above
