"""Data-type functions: astype, can_cast, finfo, iinfo, isdtype, result_type."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hostarray as ha

from . import strategies as strat
from .helpers import differential, ha_fn


@given(data=st.data())
def test_astype(data) -> None:
    src = data.draw(strat.dtypes("any"), label="from")
    dst = data.draw(strat.dtypes("any"), label="to")
    # value-changing casts (float -> int of NaN/inf/out of range) are unspecified
    x = data.draw(strat.arrays(src, finite=True, min_value=-100, max_value=100), label="x")
    if src.kind == "c" and dst.kind != "c":
        return  # complex -> real is unspecified by the standard
    r = differential("astype", x, dst)
    assert r.dtype == dst


def test_astype_complex_to_bool() -> None:
    # the standard's note on astype: 0 + 0j casts to False, every other value to True (NaN
    # components too); array_api_strict refuses the cast, so this is checked against the
    # note itself rather than differentially
    astype = ha_fn("astype")
    for dt in (ha.complex64, ha.complex128):
        vals = [0j, -0.0 - 0.0j, 1j, 2 + 0j, complex(float("nan"), 0), complex(0, float("inf"))]
        r = astype(ha.asarray(vals, dtype=dt), ha.bool)
        assert r.dtype == ha.bool
        assert np.asarray(r).tolist() == [False, False, True, True, True, True]
    with pytest.raises(TypeError, match="imaginary"):  # to a real type: refused (DEVIATIONS)
        astype(ha.asarray([1j]), ha.float64)


def test_astype_copy_and_device() -> None:
    x = ha.asarray(np.arange(4.0))
    astype = ha_fn("astype")
    y = astype(x, ha.float64, copy=True)
    y[0] = 9.0
    assert float(x[0]) == 0.0
    # copy=False and the same dtype: "the input array must be returned"
    assert astype(x, ha.float64, copy=False) is x
    z = astype(x, ha.float32, copy=False)  # another dtype: a new array all the same
    assert z.dtype == ha.float32 and z.shape == x.shape
    w = astype(x, ha.float32, device="cpu")
    assert w.device == ha.device("cpu") and w.dtype == ha.float32


@pytest.mark.device
def test_astype_on_device(cl_device) -> None:
    x = ha.asarray(np.arange(4, dtype=np.int32), device=cl_device)
    r = ha_fn("astype")(x, ha.float32)
    assert r.device == cl_device
    np.testing.assert_array_equal(np.asarray(r), np.arange(4, dtype=np.float32))
    back = ha_fn("astype")(x, ha.int32, device="cpu")
    assert back.device == ha.device("cpu")


@pytest.mark.parametrize("src", strat.ALL)
def test_can_cast(src: str) -> None:
    can_cast = ha_fn("can_cast")
    for dst in strat.ALL:
        if (src, dst) not in strat.PROMOTION:
            continue  # cross-kind casts: unspecified
        want = strat.promote(src, dst) == np.dtype(dst)
        assert can_cast(getattr(ha, src), getattr(ha, dst)) is want, (src, dst)
        assert can_cast(ha.zeros(1, dtype=getattr(ha, src)), getattr(ha, dst)) is want


@pytest.mark.parametrize("name", strat.FLOATING)
def test_finfo(name: str) -> None:
    fi = ha_fn("finfo")(getattr(ha, name))
    real = np.finfo(np.dtype(name))
    assert type(fi.bits) is int and fi.bits == real.bits
    for field in ("eps", "max", "min", "smallest_normal"):
        v = getattr(fi, field)
        assert type(v) is float, f"finfo.{field} is {type(v).__name__}, must be a Python float"
    assert fi.eps == float(real.eps) and fi.max == float(real.max)
    assert fi.min == float(real.min) and fi.smallest_normal == float(real.smallest_normal)
    assert fi.dtype == np.dtype(f"float{real.bits}")
    assert ha_fn("finfo")(ha.zeros(1, dtype=getattr(ha, name))).bits == fi.bits


@pytest.mark.parametrize("name", strat.INTEGER)
def test_iinfo(name: str) -> None:
    ii = ha_fn("iinfo")(getattr(ha, name))
    ref = np.iinfo(np.dtype(name))
    assert type(ii.bits) is int and type(ii.max) is int and type(ii.min) is int
    assert (ii.bits, ii.max, ii.min) == (ref.bits, int(ref.max), int(ref.min))
    assert ii.dtype == np.dtype(name)
    assert ha_fn("iinfo")(ha.zeros(1, dtype=getattr(ha, name))).max == int(ref.max)


KIND_MEMBERS = {
    "bool": strat.BOOL, "signed integer": strat.SIGNED, "unsigned integer": strat.UNSIGNED,
    "integral": strat.INTEGER, "real floating": strat.REAL_FLOAT,
    "complex floating": strat.COMPLEX, "numeric": strat.NUMERIC,
}


@pytest.mark.parametrize("kind", sorted(KIND_MEMBERS))
def test_isdtype_kinds(kind: str) -> None:
    isdtype = ha_fn("isdtype")
    for name in strat.ALL:
        assert isdtype(getattr(ha, name), kind) is (name in KIND_MEMBERS[kind]), (name, kind)


def test_isdtype_dtype_and_tuple() -> None:
    isdtype = ha_fn("isdtype")
    assert isdtype(ha.float32, ha.float32) is True
    assert isdtype(ha.float32, ha.float64) is False
    assert isdtype(ha.int8, ("real floating", ha.int8)) is True
    assert isdtype(ha.uint8, ("bool", "signed integer")) is False


@given(data=st.data())
def test_result_type_pairs(data) -> None:
    d1 = data.draw(strat.dtypes("any"), label="d1")
    d2 = data.draw(st.sampled_from(strat.promotable(d1.name, strat.ALL)).map(np.dtype),
                   label="d2")
    rt = ha_fn("result_type")
    assert rt(d1, d2) == strat.promote(d1, d2)
    assert rt(ha.zeros(1, dtype=d1), d2) == strat.promote(d1, d2)
    assert rt(d1) == d1


@pytest.mark.parametrize("dt,scalar,want", [
    ("int8", 1, "int8"), ("uint16", 3, "uint16"), ("float32", 1.5, "float32"),
    ("float32", 1, "float32"), ("bool", True, "bool"), ("complex64", 1j, "complex64"),
    ("float64", 1j, "complex128"), ("float32", 2j, "complex64"),
])
def test_result_type_python_scalars(dt, scalar, want) -> None:
    # 2024.12+: Python scalars take the array operand's dtype (complex promotes float)
    assert ha_fn("result_type")(getattr(ha, dt), scalar) == np.dtype(want)


def test_result_type_many() -> None:
    rt = ha_fn("result_type")
    assert rt(ha.int8, ha.int16, ha.int32) == ha.int32
    assert rt(ha.uint8, ha.int8, ha.int16) == ha.int16
    assert rt(ha.float32, ha.complex64, ha.float64) == ha.complex128
