"""Reductions on the device (``hostarray/_compute/reductions.py``): numpy's values and types.

Every test makes its input device-newest with a kernel, then compares the namespace's
result with numpy's on the same data, and (on a mapped or copied link, where the device
path runs: ``HOSTARRAY_LINK=copied``) asserts through ``ha.stats()`` that the device
computed it.  On the default shared PoCL link the same comparisons run on the host path,
and one test asserts that the device path stays off there.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import hostarray as ha
from hostarray._compute.launch import c_type
from hostarray._introspect import state
from tests._device_helpers import DTYPES, host_path, newest_on

# numpy warns computing the expected values of data with NaN and infinities
pytestmark = [pytest.mark.device, pytest.mark.filterwarnings("ignore::RuntimeWarning")]

# HOSTARRAY_THOROUGH=1 (--thorough's variable): 10x the examples
SETTINGS = settings(max_examples=250 if os.environ.get("HOSTARRAY_THOROUGH") == "1" else 25,
                    deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])
_TOUCH: dict[tuple[ha.Device, str], Any] = {}


@pytest.fixture
def dev(cl_device: ha.Device) -> Iterator[ha.Device]:
    """The OpenCL device with the device path on for every size."""
    old = ha.set_device_compute_threshold(0)
    yield cl_device
    ha.set_device_compute_threshold(old)


def on_device(d: ha.Device) -> bool:
    """Whether the device path runs on ``d`` (a mapped or copied link)."""
    return d.link != "shared"


def device_newest(a: np.ndarray, d: ha.Device) -> ha.HostPtrArray:
    """``a`` as a HostPtrArray on ``d`` whose newest bytes a kernel wrote on the device."""
    x = ha.asarray(a, device=d, copy=True)
    t = c_type(x.dtype)
    prg = _TOUCH.get((d, t))
    if prg is None:
        prg = _TOUCH[(d, t)] = ha.Program(
            f"__kernel void k(__global {t} *x) {{ long i = get_global_id(0); x[i] = x[i]; }}",
            device=d)
    prg.k(max(x.size, 1), x)
    if on_device(d):
        assert state(x).host_stale
    return x


def values(rng: np.random.Generator, dt: Any, shape: tuple[int, ...], specials: bool
           ) -> np.ndarray:
    """Random data of ``dt``: integers over the whole range (sums and products wrap),
    floats with NaN, infinities and signed zeros when ``specials``."""
    dt = np.dtype(dt)
    if dt.kind == "b":
        return np.asarray(rng.integers(0, 2, shape), dtype=bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return np.asarray(rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True))
    a = np.asarray(rng.standard_normal(shape) * 10, dtype=dt)
    if specials and a.size:
        sp = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, 1.0], dt)
        mask = rng.random(shape) < 0.2
        a[mask] = rng.choice(sp, int(mask.sum()))
    return a


def factors(a: np.ndarray, seed: int) -> np.ndarray:
    """Floating-point factors whose product can't reach 0 * inf in one order and not in
    another (a product's value then depends on the order of the multiplications): values
    in [0.9, 1.1] (NaN kept), integers 1 or 2."""
    if a.dtype.kind in "iub":
        return (a % 2 + 1).astype(a.dtype)
    r = 0.9 + 0.2 * np.random.default_rng(seed).random(a.shape)
    return np.where(np.isnan(a), a, r).astype(a.dtype)


# views of a base array, for numpy and for hostarray (``xp``)
VIEWS: dict[str, Callable[[Any, Any], Any]] = {
    "plain": lambda a, xp: a,
    "transposed": lambda a, xp: xp.permute_dims(a, tuple(reversed(range(a.ndim)))),
    "reversed": lambda a, xp: a[::-1],
    "strided": lambda a, xp: a[::2],
    "neg_strided_inner": lambda a, xp: a[..., ::-2],
}


@st.composite
def cases(draw: Any, dtypes: list[Any] = DTYPES, min_dims: int = 0) -> tuple[Any, ...]:
    """(dtype, base shape, view name, seed, specials)."""
    dt = draw(st.sampled_from(dtypes))
    nd = draw(st.integers(min_dims, 3))
    shape = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 5, 8, 70]), min_size=nd,
                                max_size=nd)))
    view = draw(st.sampled_from(sorted(VIEWS)))
    if nd == 0:
        view = "plain"
    return dt, shape, view, draw(st.integers(0, 2**32 - 1)), draw(st.booleans())


def make(d: ha.Device, case: tuple[Any, ...]) -> tuple[np.ndarray, ha.HostPtrArray]:
    """The numpy data of ``case`` and its device-newest HostPtrArray (the same view)."""
    dt, shape, view, seed, specials = case
    a = values(np.random.default_rng(seed), dt, shape, specials)
    x = device_newest(a, d)
    v, xv = VIEWS[view](a, np), VIEWS[view](x, ha)
    assume(v.size > 0)
    return v, xv


def axis_choice(draw: Any, nd: int, tuples: bool = True) -> Any:
    if nd == 0:
        return None
    k = draw(st.sampled_from(["none", "int", "neg"] + (["tuple"] if tuples else [])))
    if k == "none":
        return None
    if k == "int":
        return draw(st.integers(0, nd - 1))
    if k == "neg":
        return draw(st.integers(-nd, -1))
    return tuple(draw(st.sets(st.integers(-nd, nd - 1), min_size=1, max_size=nd)
                      .filter(lambda s: len({v % nd for v in s}) == len(s))))


def check(r: ha.HostPtrArray, expected: Any, scale: float = 1.0, rtol: float = 1e-5) -> None:
    """``r`` equals numpy's ``expected``: type, shape, and values (exactly for integers and
    bools; floats to ``rtol`` and ``rtol * scale``, the size of the terms summed)."""
    e = np.asarray(expected)
    got = np.asarray(r)
    assert type(r) is ha.HostPtrArray
    assert got.dtype == e.dtype, (got.dtype, e.dtype)
    assert got.shape == e.shape, (got.shape, e.shape)
    if e.dtype.kind == "f":
        tol = 1e-3 if e.dtype == np.float32 else rtol
        np.testing.assert_allclose(got, e, rtol=tol, atol=tol * scale, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, e)


def term_scale(a: np.ndarray, power: int = 1) -> float:
    """The sum of the finite terms' magnitudes (``power``: of squares), for tolerances."""
    f = np.abs(a.astype(np.float64))
    f = f[np.isfinite(f)]
    return float(np.sum(f ** power)) + 1.0


def ran_on_device(d: ha.Device, n: int = 1) -> None:
    s = ha.stats()
    if on_device(d):
        assert s.device_ops == n and s.host_fallbacks == 0, s
        assert s.acquires == 0, s  # nothing was read on the host to compute
    else:
        assert s.device_ops == 0


# -- differential tests ---------------------------------------------------------------------

@SETTINGS
@given(case=cases(), data=st.data())
def test_sum_prod(dev: ha.Device, case: tuple[Any, ...], data: Any) -> None:
    a, x = make(dev, case)
    name = data.draw(st.sampled_from(["sum", "prod"]))
    axis = axis_choice(data.draw, a.ndim)
    keepdims = data.draw(st.booleans())
    floats = a.dtype.kind == "f"
    dtype = data.draw(st.sampled_from([None, np.float64, np.float32] +
                                      ([] if floats else [np.int64, np.uint8, np.bool_])))
    if name == "prod" and (floats or dtype in (np.float32, np.float64)):
        a = factors(a, case[3])
        x = device_newest(a, dev)
    expected = getattr(a, name)(axis=axis, dtype=dtype, keepdims=keepdims)
    ha.reset_stats()
    r = getattr(ha, name)(x, axis=axis, dtype=dtype, keepdims=keepdims)
    ran_on_device(dev)
    check(r, expected, term_scale(a) if name == "sum" else 1.0)


@SETTINGS
@given(case=cases(), data=st.data())
def test_min_max_any_all(dev: ha.Device, case: tuple[Any, ...], data: Any) -> None:
    a, x = make(dev, case)
    name = data.draw(st.sampled_from(["min", "max", "any", "all"]))
    axis = axis_choice(data.draw, a.ndim)
    keepdims = data.draw(st.booleans())
    expected = getattr(np, name)(a, axis=axis, keepdims=keepdims)
    ha.reset_stats()
    r = getattr(ha, name)(x, axis=axis, keepdims=keepdims)
    ran_on_device(dev)
    check(r, expected)


@SETTINGS
@given(case=cases(), data=st.data())
def test_argmin_argmax(dev: ha.Device, case: tuple[Any, ...], data: Any) -> None:
    a, x = make(dev, case)
    if a.dtype.kind in "iu" and data.draw(st.booleans()):
        a = a % 3  # many ties: the first occurrence counts
        x = device_newest(a, dev)
    name = data.draw(st.sampled_from(["argmin", "argmax"]))
    axis = axis_choice(data.draw, a.ndim, tuples=False)
    keepdims = data.draw(st.booleans())
    expected = getattr(a, name)(axis=axis, keepdims=keepdims)
    ha.reset_stats()
    r = getattr(ha, name)(x, axis=axis, keepdims=keepdims)
    ran_on_device(dev)
    check(r, expected)


@SETTINGS
@given(case=cases(), data=st.data())
def test_mean_var_std(dev: ha.Device, case: tuple[Any, ...], data: Any) -> None:
    a, x = make(dev, case)
    name = data.draw(st.sampled_from(["mean", "var", "std"]))
    axis = axis_choice(data.draw, a.ndim)
    keepdims = data.draw(st.booleans())
    ax = tuple(range(a.ndim)) if axis is None else np.atleast_1d(axis)
    m = math.prod(a.shape[k] for k in ax)
    kw: dict[str, Any] = {}
    if name != "mean":
        kw["correction"] = data.draw(st.sampled_from([0, 0.5] + ([1] if m > 1 else [])))
    np_kw = {"ddof": kw["correction"]} if kw else {}
    expected = getattr(a, name)(axis=axis, keepdims=keepdims, **np_kw)
    ha.reset_stats()
    r = getattr(ha, name)(x, axis=axis, keepdims=keepdims, **kw)
    ran_on_device(dev)
    scale = term_scale(a) / m if name == "mean" else term_scale(a, 2) / m
    check(r, expected, math.sqrt(scale) if name == "std" else scale)


@SETTINGS
@given(case=cases(min_dims=1), data=st.data())
def test_cumulative(dev: ha.Device, case: tuple[Any, ...], data: Any) -> None:
    a, x = make(dev, case)
    name = data.draw(st.sampled_from(["cumulative_sum", "cumulative_prod"]))
    axis = None if a.ndim == 1 and data.draw(st.booleans()) else \
        data.draw(st.integers(-a.ndim, a.ndim - 1))
    initial = data.draw(st.booleans())
    floats = a.dtype.kind == "f"
    dtype = data.draw(st.sampled_from([None, np.float64] + ([] if floats else [np.int16])))
    expected = getattr(np, name)(a, axis=axis, dtype=dtype, include_initial=initial)
    ha.reset_stats()
    r = getattr(ha, name)(x, axis=axis, dtype=dtype, include_initial=initial)
    ran_on_device(dev)
    check(r, expected, term_scale(a) if name == "cumulative_sum" else 1.0)


@SETTINGS
@given(case=cases(min_dims=1), data=st.data())
def test_vecdot(dev: ha.Device, case: tuple[Any, ...], data: Any) -> None:
    a, x = make(dev, case)
    dt2 = data.draw(st.sampled_from([a.dtype, np.float64, np.int32, np.bool_]))
    # the second operand: the trailing axes of a's shape, some broadcast (length 1)
    nd2 = data.draw(st.integers(1, a.ndim))
    axis = data.draw(st.integers(-nd2, -1))
    shape2 = tuple(1 if k != a.ndim + axis and data.draw(st.booleans()) else n
                   for k, n in list(enumerate(a.shape))[a.ndim - nd2:])
    b = values(np.random.default_rng(case[3] + 1), dt2, shape2, case[4])
    y = device_newest(b, dev)
    expected = np.vecdot(a, b, axis=axis)
    ha.reset_stats()
    r = ha.vecdot(x, y, axis=axis)
    ran_on_device(dev)
    check(r, expected, term_scale(a) * term_scale(b))


@SETTINGS
@given(case=cases(), data=st.data())
def test_vector_norm(dev: ha.Device, case: tuple[Any, ...], data: Any) -> None:
    a, x = make(dev, case)
    order = data.draw(st.sampled_from([2, 1, math.inf, -math.inf, 0, 3, 0.5, -1]))
    axis = axis_choice(data.draw, a.ndim)
    keepdims = data.draw(st.booleans())
    af = a if a.dtype.kind == "f" else a.astype(np.float64)
    with np.errstate(all="ignore"):
        expected = np.linalg.vector_norm(af, axis=axis, keepdims=keepdims, ord=order)
    ha.reset_stats()
    r = ha.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=order)
    ran_on_device(dev)
    check(r, np.asarray(expected).astype(af.dtype))


# -- schedules: one work-item per result, one group per result, two passes -------------------

@pytest.mark.parametrize("shape, axis, launches", [
    ((1 << 20,), None, 2),         # whole array: many groups, then one
    ((3, 100_000), 1, 2),          # few results: two passes
    ((1024, 600), 1, 1),           # a group per result
    ((600, 1024), 0, 1),           # strided reduced axis, a group per result
    ((20_000, 70), 1, 1),          # a work-item per result
])
def test_schedules(dev: ha.Device, shape: tuple[int, ...], axis: Any, launches: int) -> None:
    a = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    a.flat[12345] = np.nan  # NaN propagation across partials
    x = device_newest(a, dev)
    for name in ("sum", "max", "argmin", "argmax"):
        ha.reset_stats()
        r = getattr(ha, name)(x, axis=axis)
        if on_device(dev):
            assert ha.stats().launches == launches
        ran_on_device(dev)
        check(r, getattr(a, name)(axis=axis), term_scale(a))
    b = np.abs(a)
    b.flat[12345] = 0
    y = device_newest(b, dev)
    for name in ("var", "std", "mean"):
        ha.reset_stats()
        r = getattr(ha, name)(y, axis=axis)
        ran_on_device(dev)
        check(r, getattr(b, name)(axis=axis), 1e-3)


def test_argmax_ties_across_partials(dev: ha.Device) -> None:
    a = np.zeros(1 << 20, np.int32)
    a[[700_000, 5, 900_001]] = 7   # first occurrence: 5, in the first partial
    a[[300, 800_000]] = -7
    x = device_newest(a, dev)
    ha.reset_stats()
    assert int(ha.argmax(x)) == 5
    assert int(ha.argmin(x)) == 300
    assert int(ha.argmin(device_newest(np.full(1 << 20, np.nan), dev))) == 0
    assert ha.stats().device_ops == (3 if on_device(dev) else 0)


def test_signed_zeros(dev: ha.Device) -> None:
    a = np.full((3, 40), -0.0)
    x = device_newest(a, dev)
    ha.reset_stats()
    for r, e in [(ha.cumulative_sum(x, axis=1), np.cumulative_sum(a, axis=1)),
                 (ha.cumulative_sum(x, axis=0, include_initial=True),
                  np.cumulative_sum(a, axis=0, include_initial=True)),
                 (ha.sum(x, axis=1), a.sum(axis=1)), (ha.sum(x), a.sum())]:
        check(r, e)
        np.testing.assert_array_equal(np.signbit(np.asarray(r)), np.signbit(e))
    assert ha.stats().device_ops == (4 if on_device(dev) else 0)


# -- transfers and counters -----------------------------------------------------------------

@pytest.mark.parametrize("name", ["sum", "prod", "max", "mean", "std", "argmax", "any",
                                  "cumulative_sum"])
def test_result_stays_on_device(off_shared: ha.Device, dev: ha.Device, name: str) -> None:
    a = np.random.default_rng(2).random(1 << 16)
    x = device_newest(a, dev)
    ha.reset_stats()
    r = getattr(ha, name)(x)
    s = ha.stats()
    assert s.device_ops == 1 and s.bytes_moved == 0 and s.acquires == 0, s
    assert r.device == dev and state(r).host_stale
    value = np.asarray(r).copy()  # the host looks: exactly the result's bytes come back
    s = ha.stats()
    assert s.acquires == 1 and s.bytes_acquired == r.nbytes and s.bytes_published == 0, s
    check(r, getattr(np, name)(a), term_scale(a))
    np.testing.assert_array_equal(value, np.asarray(r))


def test_scalar_result_acquired_when_read(off_shared: ha.Device, dev: ha.Device) -> None:
    a = np.arange(1 << 18, dtype=np.float64)
    x = device_newest(a, dev)
    ha.reset_stats()
    r = ha.sum(x)
    assert ha.stats().bytes_moved == 0 and ha.stats().device_ops == 1
    assert r.shape == () and r.dtype == ha.float64
    assert float(r) == float(a.sum())
    s = ha.stats()
    assert s.acquires == 1 and s.bytes_acquired == 8, s
    # a reduction of a device result: still nothing moves
    ha.reset_stats()
    m = ha.max(ha.sum(ha.reshape(x, (512, 512)), axis=1))
    s = ha.stats()
    assert s.device_ops == 2 and s.bytes_moved == 0, s
    assert float(m) == float(a.reshape(512, 512).sum(axis=1).max())


def test_vecdot_publishes_small_host_operand(off_shared: ha.Device, dev: ha.Device) -> None:
    a = np.random.default_rng(6).random((4096, 64))
    b = np.random.default_rng(7).random(64)
    x = device_newest(a, dev)
    y = ha.asarray(b, device=dev, copy=True)   # host-newest, small: published, not acquired
    ha.reset_stats()
    r = ha.vecdot(x, y)
    s = ha.stats()
    assert s.device_ops == 1 and s.bytes_acquired == 0 and s.bytes_published == b.nbytes, s
    check(r, np.vecdot(a, b), 64.0)


def test_shared_link_keeps_host_path(cl_device: ha.Device) -> None:
    if cl_device.link != "shared":
        pytest.skip("checks the default shared link (run without HOSTARRAY_LINK)")
    old = ha.set_device_compute_threshold(0)
    try:
        a = np.random.default_rng(3).random((64, 64))
        x = device_newest(a, cl_device)
        ha.reset_stats()
        check(ha.sum(x, axis=0), a.sum(axis=0), term_scale(a))
        check(ha.argmax(x), a.argmax())
        check(ha.linalg.vector_norm(x), np.linalg.vector_norm(a))
        s = ha.stats()
        assert s.device_ops == 0 and s.host_fallbacks == 0, s
    finally:
        ha.set_device_compute_threshold(old)


def test_host_fallbacks(dev: ha.Device) -> None:
    a = np.random.default_rng(4).random((4, 5)) * 100
    x = device_newest(a, dev)
    ha.reset_stats()
    check(ha.sum(x, dtype=ha.int64), a.sum(dtype=np.int64))  # floats to integers: numpy's casts
    assert ha.stats().host_fallbacks == (1 if on_device(dev) else 0)
    assert ha.stats().device_ops == 0
    e = device_newest(np.zeros((4, 3)), dev)[:0]  # an empty view of device-newest data
    ha.reset_stats()
    check(ha.sum(e, axis=0), np.zeros(3))        # empty: numpy's identity
    with pytest.raises(ValueError):
        ha.max(e, axis=0)                        # and numpy's error
    with pytest.raises((ValueError, IndexError)):
        ha.sum(x, axis=2)
    assert ha.stats().device_ops == 0


def test_below_threshold_stays_on_host(cl_device: ha.Device) -> None:
    old = ha.set_device_compute_threshold(1 << 30)
    try:
        a = np.random.default_rng(5).random(1000)
        x = device_newest(a, cl_device)
        ha.reset_stats()
        check(ha.sum(x), a.sum(), term_scale(a))
        assert ha.stats().device_ops == 0 and ha.stats().host_fallbacks == 0
    finally:
        ha.set_device_compute_threshold(old)


def test_import_does_not_load_kernels_module() -> None:
    code = ("import sys, hostarray as ha; ha.sum(ha.asarray([1, 2])); "
            "assert 'hostarray._compute.reductions' not in sys.modules; "
            "assert 'pyopencl' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


# -- max and min: the sign of a zero result as on the host -----------------------------------------

@pytest.mark.parametrize("fn,values", [("max", [-0.0, 0.0]), ("max", [0.0, -0.0]),
                                       ("min", [0.0, -0.0]), ("min", [-0.0, 0.0])])
def test_max_min_signed_zero_matches_host(cl_device, device_path, fn, values) -> None:
    expected = getattr(np, fn)(np.asarray(values, np.float32))
    got = np.asarray(getattr(ha, fn)(newest_on(cl_device, values, "float32")))
    host = np.asarray(host_path(lambda: getattr(ha, fn)(newest_on(cl_device, values,
                                                                  "float32"))))
    assert np.signbit(host) == np.signbit(expected)
    assert np.signbit(got) == np.signbit(expected), (got, expected)


# -- arguments the host path refuses are refused on the device path too ----------------------------

@pytest.mark.parametrize("fn", ["sum", "max", "mean", "any"])
def test_keepdims_numpy_bool_same_outcome_as_host(cl_device, device_path, fn) -> None:
    # the host path raises TypeError for keepdims=np.True_; the device path does too on a
    # first call, but accepts it once a call with keepdims=1 is cached (np.True_ == 1)
    data = np.arange(24).reshape(2, 3, 4)
    getattr(ha, fn)(newest_on(cl_device, data, "int32"), axis=0, keepdims=1)

    def call():
        try:
            r = getattr(ha, fn)(newest_on(cl_device, data, "int32"), axis=0, keepdims=np.True_)
            return ("ok", np.asarray(r).shape)
        except Exception as e:  # noqa: BLE001
            return ("err", type(e))

    assert call() == host_path(call)


def test_bool_axis_is_refused_after_an_int_axis_was_cached(cl_device, device_path) -> None:
    # host path: sum(x, axis=True) raises TypeError; the device path too, until sum(x, axis=1)
    # has run: then axis=True hits the cached plan of axis=1 and succeeds
    data = np.arange(24).reshape(2, 3, 4)
    with pytest.raises(TypeError):
        host_path(lambda: ha.sum(newest_on(cl_device, data, "int32"), axis=True))
    ha.sum(newest_on(cl_device, data, "int32"), axis=1)
    with pytest.raises(TypeError):
        ha.sum(newest_on(cl_device, data, "int32"), axis=True)
    with pytest.raises(TypeError):
        ha.sum(newest_on(cl_device, data, "int32"), axis=(True,))


def test_vector_norm_axis_list_same_outcome_as_host(cl_device, device_path) -> None:
    data = np.arange(24.0).reshape(2, 3, 4)

    def call():
        try:
            r = ha.linalg.vector_norm(newest_on(cl_device, data, "float32"), axis=[0, 1])
            return ("ok", np.asarray(r).shape)
        except Exception as e:  # noqa: BLE001
            return ("err", type(e))

    assert call() == host_path(call)
