"""Where the namespace meets the standard's text beyond the conformance suite
(``array_api_tests/``): ``expm1``'s complex special cases (the 2025.12 page's table as an
independent oracle), ``can_cast`` as the namespace's own promotions and numpy's safe
casting, ``__array_namespace_info__().dtypes`` per device (float64 only where the device
has doubles), allocation failures reported in the user's terms (the shape and data type
asked for, not the padded buffer), and ``arange`` of numpy integers."""

from __future__ import annotations

import cmath
import itertools
import math
import sys

import numpy as np
import pytest

import hostarray as ha
from hostarray import _dtypes, _info
from hostarray._devices import Device

INF, NAN = math.inf, math.nan
ANY = object()  # the standard leaves this zero's or infinity's sign unspecified


# -- expm1: the complex special cases of the 2025.12 page, as an independent oracle ----------

def _spec_expm1(a: float, b: float) -> tuple[object, object] | None:
    """The standard's result for ``expm1(a + bj)`` with ``b`` of positive sign (or NaN):
    ``(real, imag)`` (``ANY`` for an unspecified sign), ``None`` when no special case
    applies."""
    finite_a = math.isfinite(a)
    if a == 0 and b == 0:
        return (0.0, 0.0)  # "a is +0 or -0 and b is +0: 0 + 0j" (a +0 real part)
    if finite_a and b == INF:
        return (NAN, NAN)
    if finite_a and math.isnan(b):
        return (NAN, NAN)
    if a == INF and b == 0:
        return (INF, 0.0)
    if a == -INF and math.isfinite(b):  # +0 * cis(b) - 1
        return (-1.0, math.copysign(0.0, math.sin(b)) if b else 0.0)
    if a == INF and math.isfinite(b):  # +infinity * cis(b) - 1, b nonzero
        return (INF * math.cos(b) - 1.0, INF * math.sin(b))
    if a == -INF and b == INF:
        return (-1.0, ANY)
    if a == INF and b == INF:
        return (ANY, NAN)  # "infinity + NaN j", the real part's sign unspecified
    if a == -INF and math.isnan(b):
        return (-1.0, ANY)
    if a == INF and math.isnan(b):
        return (ANY, NAN)
    if math.isnan(a) and b == 0:
        return (NAN, 0.0)
    if math.isnan(a):  # b nonzero (finite or infinite) or NaN
        return (NAN, NAN)
    return None


def spec_expm1(z: complex) -> tuple[object, object] | None:
    """:func:`_spec_expm1` for any ``z``, through ``expm1(conj(x)) == conj(expm1(x))``."""
    a, b = z.real, z.imag
    if not math.isnan(b) and math.copysign(1.0, b) < 0:
        r = _spec_expm1(a, -b)
        if r is None:
            return None
        re, im = r
        return re, (im if im is ANY or math.isnan(im) else -im)
    return _spec_expm1(a, b)


def _same(got: float, want: object) -> bool:
    """Equal, NaN equal to NaN, zeros of the same sign; ``ANY``: zero or infinity of
    either sign, as the marker stands for."""
    if want is ANY:
        return got == 0 or math.isinf(got)
    assert isinstance(want, float)
    if math.isnan(want):
        return math.isnan(got)
    if want == 0:
        return got == 0 and math.copysign(1.0, got) == math.copysign(1.0, want)
    return got == want


_PARTS = (0.0, -0.0, 1.5, -1.5, 0.5, 3.0, -4.0, 1e-30, INF, -INF, NAN)
_GRID = [complex(a, b) for a, b in itertools.product(_PARTS, _PARTS)]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_expm1_complex_special_cases_match_the_spec_table(dtype: str) -> None:
    x = ha.asarray(np.array(_GRID, dtype=dtype))
    got = np.asarray(ha.expm1(x))
    assert got.dtype == np.dtype(dtype)
    tol = 1e-5 if dtype == "complex64" else 1e-12
    special = 0
    wrong = []
    for z, r in zip(np.array(_GRID, dtype=dtype), got):
        z = complex(z)
        want = spec_expm1(z)
        if want is None:  # finite, no special case: the value itself
            ref = cmath.exp(z) - 1 if abs(z) > 0.1 else None
            if ref is not None and not cmath.isclose(complex(r), ref, rel_tol=tol):
                wrong.append((z, complex(r), ref))
            continue
        special += 1
        if not (_same(float(r.real), want[0]) and _same(float(r.imag), want[1])):
            wrong.append((z, (float(r.real), float(r.imag)), want))
    assert special > 60  # the grid does reach the table
    assert not wrong, f"expm1 differs from the standard's special cases: {wrong}"


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("real", [0.0, -0.0])
def test_expm1_of_a_signed_zero_is_positive_zero(dtype: str, real: float) -> None:
    # the issue's case, alone and among other elements (the fix-up is masked)
    for values in ([complex(real, 0.0)], [1 + 1j, complex(real, 0.0), complex(INF, 0.0)]):
        r = complex(np.asarray(ha.expm1(ha.asarray(np.array(values, dtype=dtype))))
                    [values.index(complex(real, 0.0))])
        assert r == 0 and math.copysign(1.0, r.real) == 1.0 and math.copysign(1.0, r.imag) == 1.0
    # conjugation: expm1(±0 - 0j) is +0 - 0j
    r = complex(np.asarray(ha.expm1(ha.asarray(np.array([complex(real, -0.0)], dtype=dtype))))[0])
    assert math.copysign(1.0, r.real) == 1.0 and math.copysign(1.0, r.imag) == -1.0


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_expm1_is_conjugate_symmetric(dtype: str) -> None:
    x = np.array(_GRID, dtype=dtype)
    r = np.asarray(ha.expm1(ha.asarray(x)))
    rc = np.asarray(ha.expm1(ha.asarray(np.conj(x))))
    for z, u, v in zip(x, r, rc):
        w = np.conj(u)
        for p, q in ((v.real, w.real), (v.imag, w.imag)):
            assert (math.isnan(p) and math.isnan(q)) or (
                p == q and math.copysign(1.0, p) == math.copysign(1.0, q)), (z, u, v)


def test_expm1_real_special_cases_unchanged() -> None:
    x = ha.asarray(np.array([0.0, -0.0, INF, -INF, NAN]))
    r = np.asarray(ha.expm1(x))
    assert math.copysign(1.0, r[0]) == 1.0 and r[0] == 0
    assert math.copysign(1.0, r[1]) == -1.0 and r[1] == 0
    assert r[2] == INF and r[3] == -1.0 and math.isnan(r[4])


@pytest.mark.device
def test_expm1_of_device_arrays(cl_device: ha.Device) -> None:
    x = ha.asarray(np.array([complex(-0.0, 0.0)]), device=cl_device)
    r = ha.expm1(x)
    assert r.device == cl_device
    v = complex(np.asarray(r)[0])
    assert math.copysign(1.0, v.real) == 1.0 and math.copysign(1.0, v.imag) == 1.0


# -- can_cast against the promotions the namespace performs ---------------------------------

DTYPES = list(_dtypes.ALL_DTYPES)


def _performed_promotions() -> dict[tuple[np.dtype, np.dtype], set[str]]:
    """``(a, c) -> {how}`` for every promotion of ``a`` to ``c != a`` that
    ``ha.result_type(a, b)`` or ``ha.add`` of arrays of ``a`` and ``b`` performs."""
    seen: dict[tuple[np.dtype, np.dtype], set[str]] = {}
    for a, b in itertools.product(DTYPES, repeat=2):
        c = ha.result_type(a, b)
        assert ha.result_type(ha.zeros(1, dtype=a), ha.zeros(1, dtype=b)) == c
        if c != a:
            seen.setdefault((a, c), set()).add(f"result_type({a}, {b})")
        if a.kind == "b" and b.kind == "b":
            continue  # add of bool arrays: numpy's logical or, not a promotion
        s = ha.add(ha.ones(1, dtype=a), ha.ones(1, dtype=b)).dtype
        assert s == c, f"ha.add({a}, {b}) gives {s}, result_type {c}"
        if s != a:
            seen.setdefault((a, s), set()).add(f"add({a}, {b})")
    return seen


def _value_safe(f: np.dtype, t: np.dtype) -> bool:
    """Every value of ``f`` survives ``astype(x, t)`` and back, checked on the extreme and
    awkward values of ``f`` (a numerical oracle, not the library's rule)."""
    if f == t:
        return True
    if f.kind == "b":
        vals = np.array([False, True])
    elif f.kind in "iu":
        ii = np.iinfo(f)
        vals = np.array([ii.min, ii.max, ii.max - 1, ii.min + 1, 0, 1], dtype=f)
    else:
        fi = np.finfo(f)
        parts = [fi.max, -fi.max, fi.tiny, fi.smallest_subnormal, fi.eps, 1 + fi.eps,
                 np.inf, 0.0]
        real = np.array(parts, dtype=np.finfo(f).dtype)
        vals = np.empty(len(parts), dtype=f)
        if f.kind == "c":
            vals.real, vals.imag = real, real[::-1]
        else:
            vals[...] = real
    if f.kind == "c" and t.kind != "c":
        return False
    try:
        with np.errstate(all="ignore"):
            there = ha.astype(ha.asarray(vals), t)
            if t.kind == "c" and f.kind != "c":  # the way back to a real type: its real part
                assert not np.any(np.asarray(ha.imag(there)))
                there = ha.real(there)
            back = ha.astype(there, f)
    except TypeError:
        return False
    return bool(np.array_equal(np.asarray(back), vals, equal_nan=True))


# the promotions the namespace performs that can round: numpy's int64/uint64 -> float64
ROUNDING = {("int64", "float64"), ("int64", "complex128"), ("uint64", "float64"),
            ("uint64", "complex128")}


def test_can_cast_agrees_with_the_namespace_promotions() -> None:
    promotions = _performed_promotions()
    lossy = {(str(a), str(c)) for (a, c) in promotions if not _value_safe(a, c)}
    assert lossy == ROUNDING, sorted(lossy)
    missing = [(str(a), str(c), sorted(how)[0]) for (a, c), how in promotions.items()
               if not ha.can_cast(a, c)]
    assert not missing, f"the namespace promotes these, can_cast says False: {missing}"


@pytest.mark.parametrize("src", DTYPES, ids=str)
def test_can_cast_is_numpys_safe_casting(src: np.dtype) -> None:
    # Issue 20 (7): int64/uint64 -> float64/complex128 answered False (a second rule, "no
    # value lost", on top of the promotions) where numpy, and the array API test suite's
    # reading of 2025.12, answer True: one rule now, for every pair
    for dst in DTYPES:
        want = bool(np.can_cast(src, dst, "safe"))
        answer = ha.can_cast(src, dst)
        assert type(answer) is bool and answer is want, (str(src), str(dst))
        assert ha.can_cast(ha.zeros(1, dtype=src), dst) is want, (str(src), str(dst))
        assert answer is (ha.result_type(src, dst) == dst), (str(src), str(dst))
        if answer and (str(src), str(dst)) not in ROUNDING:
            assert _value_safe(src, dst), f"can_cast({src}, {dst}) is True but loses values"


def test_can_cast_is_the_standards_within_its_table() -> None:
    xp = pytest.importorskip("array_api_strict")
    compared = 0
    for a, b in itertools.product(DTYPES, repeat=2):
        sa, sb = getattr(xp, a.name), getattr(xp, b.name)
        try:
            xp.result_type(sa, sb)
        except TypeError:
            continue  # across kinds: left to the implementation (numpy's, above)
        compared += 1
        assert ha.can_cast(a, b) is bool(xp.can_cast(sa, sb)), (str(a), str(b))
    assert compared == 73  # bool, the integers (less int with uint64), the floating types


def test_can_cast_of_the_issue_pairs() -> None:
    assert ha.can_cast(ha.int64, ha.float64) and ha.can_cast(ha.uint64, ha.float64)
    assert ha.can_cast(ha.int64, ha.complex128) and ha.can_cast(ha.uint64, ha.complex128)
    assert ha.can_cast(ha.bool, ha.float64) and ha.can_cast(ha.int32, ha.float64)
    assert not ha.can_cast(ha.int64, ha.float32) and not ha.can_cast(ha.int64, ha.complex64)
    assert not ha.can_cast(ha.int32, ha.float32) and not ha.can_cast(ha.float32, ha.int64)
    assert "can_cast" in ha._api.DEVIATIONS and "int64" in ha._api.DEVIATIONS["can_cast"]


def test_can_cast_within_the_standard_table() -> None:
    # the standard's own answers (within kinds), unchanged
    assert ha.can_cast(ha.int8, ha.int16) and not ha.can_cast(ha.int16, ha.int8)
    assert ha.can_cast(ha.uint8, ha.int16) and not ha.can_cast(ha.int8, ha.uint64)
    assert not ha.can_cast(ha.uint64, ha.int64) and not ha.can_cast(ha.int64, ha.uint64)
    assert ha.can_cast(ha.float32, ha.complex64) and ha.can_cast(ha.float32, ha.float64)
    assert not ha.can_cast(ha.float64, ha.complex64) and not ha.can_cast(ha.complex64, ha.float32)
    # across kinds: the namespace's promotions
    assert ha.can_cast(ha.bool, ha.int8) and not ha.can_cast(ha.int8, ha.bool)
    assert ha.can_cast(ha.int16, ha.float32) and not ha.can_cast(ha.int32, ha.float32)
    assert ha.can_cast(ha.int32, ha.float64) and ha.can_cast(ha.int64, ha.float64)
    assert not ha.can_cast(ha.float32, ha.int64)


# -- dtypes per device -------------------------------------------------------------------------

def _info_obj() -> ha._info.Info:
    return ha.__array_namespace_info__()


def test_dtypes_on_the_host_include_float64() -> None:
    d = _info_obj().dtypes(device="cpu")
    assert "float64" in d and "complex128" in d and len(d) == 13
    assert _info.supports_float64(ha.device("cpu"))
    assert list(_info_obj().dtypes(device="cpu", kind="real floating")) == ["float32", "float64"]


@pytest.mark.device
def test_dtypes_on_the_real_device_follow_its_double_support(cl_device: ha.Device) -> None:
    doubles = int(cl_device._cl_device.double_fp_config) != 0
    d = _info_obj().dtypes(device=cl_device)
    assert ("float64" in d) is doubles and ("complex128" in d) is doubles
    assert ("float32" in d) and ("complex64" in d) and ("int64" in d)
    assert _info_obj().dtypes(device=str(cl_device)) == d
    kinds = _info_obj().dtypes(device=cl_device, kind=("real floating", "complex floating"))
    assert set(kinds) == ({"float32", "float64", "complex64", "complex128"} if doubles
                          else {"float32", "complex64"})


class _NoDoubles:
    """A stand-in for a pyopencl device without double precision."""

    double_fp_config = 0


def test_dtypes_on_a_device_without_doubles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_info, "_FP64", {})
    dev = Device("opencl", "opencl:97:0", "no-doubles GPU", "GPU", 128, 2**30, False,
                 _NoDoubles())
    d = _info_obj().dtypes(device=dev)
    assert "float64" not in d and "complex128" not in d
    assert list(d) == [n for n in (dt.name for dt in _dtypes.ALL_DTYPES)
                       if n not in ("float64", "complex128")]
    assert list(_info_obj().dtypes(device=dev, kind="real floating")) == ["float32"]
    assert list(_info_obj().dtypes(device=dev, kind="complex floating")) == ["complex64"]
    assert not _info.supports_float64(dev)


def test_dtypes_without_device_are_the_default_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_info, "_FP64", {})
    dev = Device("opencl", "opencl:98:0", "no-doubles GPU", "GPU", 128, 2**30, False,
                 _NoDoubles())
    monkeypatch.setattr(_info, "_default_device", lambda: dev)
    assert "float64" not in _info_obj().dtypes()


# -- allocation failures in the user's terms -------------------------------------------------

def _check_message(e: BaseException, shape: tuple[int, ...], dtype: str, nbytes: int) -> None:
    msg = str(e)
    assert f"shape {shape}" in msg and f"data type {dtype}" in msg, msg
    assert f"{nbytes} bytes" in msg, msg
    assert "uint8" not in msg and "4096" not in msg, msg  # not the padded internal buffer
    assert "smaller" in msg and "Dask" in msg, msg  # what to do


@pytest.mark.parametrize("name", ["empty", "zeros", "ones", "full", "eye"])
def test_allocation_failure_names_the_request(name: str) -> None:
    if name == "eye":
        shape = (10**8, 10**8)
        call = lambda: ha.eye(10**8, dtype=ha.float32)  # noqa: E731
    else:
        shape = (10**15,)
        args = (2.5,) if name == "full" else ()
        call = lambda: getattr(ha, name)(10**15, *args, dtype=ha.float32)  # noqa: E731
    with pytest.raises(MemoryError) as e:
        call()
    _check_message(e.value, shape, "float32", 4 * math.prod(shape))


@pytest.mark.parametrize("name", ["arange", "linspace"])
def test_allocation_failure_of_ranges_names_the_request(name: str) -> None:
    # linspace computes in float64 first: numpy's own message named float64, not the
    # float32 asked for
    with pytest.raises(MemoryError) as e:
        if name == "arange":
            ha.arange(10**15, dtype=ha.float32)
        else:
            ha.linspace(0, 1, 10**15, dtype=ha.float32)
    _check_message(e.value, (10**15,), "float32", 4 * 10**15)


def test_allocation_failure_of_the_like_functions() -> None:
    x = ha.zeros((2, 3), dtype=ha.float32)
    huge = ha.broadcast_to(x[:1, :1], (10**8, 10**7))  # a view: no memory of its own
    for like in (ha.empty_like, ha.zeros_like, ha.ones_like):
        with pytest.raises(MemoryError) as e:
            like(huge)
        _check_message(e.value, (10**8, 10**7), "float32", 4 * 10**15)
    with pytest.raises(MemoryError) as e:
        ha.full_like(huge, 1.0, dtype=ha.float64)
    _check_message(e.value, (10**8, 10**7), "float64", 8 * 10**15)
    assert "float32 halves it" in str(e.value)


def test_allocation_beyond_the_address_space_names_the_request() -> None:
    shape = (2**40, 2**40)
    for make in (ha.empty, ha.zeros, ha.ones):
        with pytest.raises(ValueError) as e:
            make(shape, dtype=ha.int16)
        _check_message(e.value, shape, "int16", 2 * 2**80)
        assert str(sys.maxsize) in str(e.value)


def test_allocation_messages_keep_the_exception_types_of_numpy() -> None:
    with pytest.raises(MemoryError):  # numpy's class (its _ArrayMemoryError is one too)
        ha.empty(10**15)
    with pytest.raises(ValueError, match="negative dimensions"):
        ha.empty(-1)
    assert ha.empty(0).shape == (0,) and ha.zeros((2, 0)).shape == (2, 0)


def test_arange_of_numpy_integers_is_integral() -> None:
    # integers are integers whether Python's or numpy's (len(a), a.shape[0], np.int32(n))
    for args in [(np.int32(4),), (np.int64(1), 7, np.int8(2)), (0, np.uint16(3))]:
        r = ha.arange(*args)
        assert r.dtype == ha.int64, (args, r.dtype)
        assert np.asarray(r).tolist() == list(range(*(int(a) for a in args)))
    assert ha.arange(np.float32(1.5)).dtype == ha.float64
