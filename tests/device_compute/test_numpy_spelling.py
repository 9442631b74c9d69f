"""numpy's spellings on device data (issue 22): ``np.mean(x, axis=0)``, ``np.exp(x)``,
``np.add.reduce(x)``, ``x.sum()`` are the namespace's calls, so on device-newest data they
run on the device and leave their results there.

Every test takes its device from ``off_shared`` (a copied link where the device's own is
shared: every transfer is a real copy, so a missing one is a wrong value), makes its
inputs device-newest with a kernel, compares with numpy on copies and asserts through
``ha.stats()`` that the device computed them and nothing came back before the result
was read.  The results rule (a full reduction is a 0-d HostPtrArray that works as a
Python number) is checked on both paths.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hostarray as ha
from hostarray.errors import PerformanceWarning
from tests._device_helpers import device_newest

pytestmark = [pytest.mark.device, pytest.mark.filterwarnings("ignore::RuntimeWarning")]

SETTINGS = settings(max_examples=int(os.environ.get("HOSTARRAY_HYPOTHESIS_EXAMPLES", "25")),
                    deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


@pytest.fixture
def dev(off_shared: ha.Device, device_path: None) -> ha.Device:
    """A device off a shared link, the device path taken at every size."""
    return off_shared


def check(got: Any, want: Any, exact: bool) -> None:
    """``got`` (hostarray's) against numpy's ``want``: HostPtrArrays of numpy's shape and
    data type (a numpy scalar's answer is a 0-d HostPtrArray), numpy's values."""
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            check(g, w, exact)
        return
    want = np.asarray(want)
    assert type(got) is ha.HostPtrArray, type(got)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want)
    if exact or want.dtype.kind not in "fc":
        np.testing.assert_array_equal(np.asarray(got), want)
    else:
        tol = 2e-4 if want.dtype == np.float32 else 1e-10
        np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)


# -- numpy's functions, on device-newest inputs -------------------------------------------------

# (call, exact: float results equal bit for bit)
FUNCTIONS: dict[str, tuple[Callable[..., Any], bool]] = {
    "sum": (lambda a: np.sum(a), False),
    "sum_axis0": (lambda a: np.sum(a, axis=0), False),
    "sum_keepdims": (lambda a: np.sum(a, axis=1, keepdims=True), False),
    "sum_tuple_axis": (lambda a: np.sum(a, axis=(0, 1)), False),
    "sum_dtype": (lambda a: np.sum(a, axis=0, dtype=np.float64), False),
    "prod": (lambda a: np.prod(a, axis=1), False),
    "mean": (lambda a: np.mean(a), False),
    "mean_axis": (lambda a: np.mean(a, axis=0), False),
    "mean_dtype": (lambda a: np.mean(a, axis=1, dtype=np.float64), False),
    "var_ddof": (lambda a: np.var(a, axis=0, ddof=1), False),
    "std": (lambda a: np.std(a, axis=1), False),
    "std_correction": (lambda a: np.std(a, correction=1), False),
    "min": (lambda a: np.min(a, axis=0), True),
    "amax": (lambda a: np.amax(a), True),
    "argmin": (lambda a: np.argmin(a, axis=1), True),
    "argmax": (lambda a: np.argmax(a), True),
    "argmax_keepdims": (lambda a: np.argmax(a, axis=0, keepdims=True), True),
    "any": (lambda a: np.any(a > 0, axis=0), True),
    "all": (lambda a: np.all(a > -5), True),
    "cumsum": (lambda a: np.cumsum(a, axis=0), False),
    "cumsum_flat": (lambda a: np.cumsum(a), False),
    "cumprod": (lambda a: np.cumprod(a, axis=1), False),
    "where": (lambda a: np.where(a > 0, a, 0), True),
    "clip": (lambda a: np.clip(a, -1, 2), True),
    "dot_2d": (lambda a: np.dot(a, a.T), False),
    "dot_1d": (lambda a: np.dot(a[0], a[1]), False),
    "dot_nd": (lambda a: np.dot(a.reshape(2, -1, a.shape[1]), a.T), False),
    "matmul": (lambda a: np.matmul(a, a.T), False),
    "tensordot": (lambda a: np.tensordot(a, a, axes=([0], [0])), False),
    "vdot": (lambda a: np.vdot(a, a), False),
    "inner": (lambda a: np.inner(a, a), False),
    "outer": (lambda a: np.outer(a[0], a[1]), True),
    "copy": (lambda a: np.copy(a), True),
    "astype": (lambda a: np.astype(a, np.int32), True),
    "zeros_like": (lambda a: np.zeros_like(a), True),
    "full_like": (lambda a: np.full_like(a, 3), True),
    "ones_like_shape": (lambda a: np.ones_like(a, shape=(3, 2)), True),
    "reshape": (lambda a: np.reshape(a, (-1,)), True),
    "ravel": (lambda a: np.ravel(a), True),
    "transpose": (lambda a: np.transpose(a), True),
    "swapaxes": (lambda a: np.swapaxes(a, 0, 1), True),
    "expand_dims": (lambda a: np.expand_dims(a, (0, 2)), True),
    "squeeze": (lambda a: np.squeeze(a[:1]), True),
    "concatenate": (lambda a: np.concatenate([a, a], axis=1), True),
    "stack": (lambda a: np.stack([a, a]), True),
}
# what the device computes itself (views and joins move nothing and launch nothing)
VIEWS = {"reshape", "ravel", "transpose", "swapaxes", "expand_dims", "squeeze", "concatenate",
         "stack"}

shapes = st.tuples(st.integers(2, 6), st.integers(1, 5)).map(lambda s: (s[0] * 2, s[1]))


def _data(dt: Any) -> Any:
    if np.dtype(dt).kind == "f":
        return st.floats(-4, 4, width=32 if dt == np.float32 else 64)
    return st.integers(-4, 4)


@SETTINGS
@given(data=st.data(), name=st.sampled_from(sorted(FUNCTIONS)),
       dt=st.sampled_from([np.float32, np.float64, np.int32]))
def test_numpy_functions_on_device_data_match_numpy(dev, data, name, dt) -> None:
    call, exact = FUNCTIONS[name]
    a = data.draw(hnp.arrays(dt, shapes, elements=_data(dt)))
    want = call(a.copy())
    x = device_newest(a, dev)
    ha.reset_stats()
    got = call(x)
    s = ha.stats()
    if name not in VIEWS:  # computed on the device, and nothing came back
        assert s.device_ops >= 1 and s.host_fallbacks == 0, s
    if name not in ("concatenate", "stack"):  # (ha.concat and ha.stack join on the host)
        assert s.bytes_acquired == 0, s
    check(got, want, exact)


METHODS: dict[str, tuple[Callable[..., Any], bool]] = {
    "sum": (lambda x: x.sum(), False), "sum_axis": (lambda x: x.sum(axis=0), False),
    "mean": (lambda x: x.mean(axis=0), False), "std": (lambda x: x.std(ddof=1), False),
    "max": (lambda x: x.max(), True), "min": (lambda x: x.min(axis=1), True),
    "argmax": (lambda x: x.argmax(axis=1), True), "any": (lambda x: x.any(), True),
    "cumsum": (lambda x: x.cumsum(axis=1), False), "clip": (lambda x: x.clip(0), True),
    "clip_max": (lambda x: x.clip(max=1), True), "copy": (lambda x: x.copy(), True),
    "astype": (lambda x: x.astype(np.float64), True), "dot": (lambda x: x.dot(x.T), False),
    "prod": (lambda x: x.prod(axis=0), False), "var": (lambda x: x.var(axis=1), False),
}


@SETTINGS
@given(data=st.data(), name=st.sampled_from(sorted(METHODS)),
       dt=st.sampled_from([np.float32, np.int32]))
def test_ndarray_methods_on_device_data_follow_their_function(dev, data, name, dt) -> None:
    call, exact = METHODS[name]
    a = data.draw(hnp.arrays(dt, shapes, elements=_data(dt)))
    want = call(a.copy())
    x = device_newest(a, dev)
    ha.reset_stats()
    got = call(x)
    s = ha.stats()
    assert s.device_ops >= 1 and s.host_fallbacks == 0 and s.bytes_acquired == 0, s
    check(got, want, exact)


UFUNCS = [np.add, np.subtract, np.multiply, np.divide, np.maximum, np.minimum, np.less,
          np.equal, np.power, np.exp, np.sqrt, np.negative, np.absolute, np.logical_and,
          np.logical_not, np.floor, np.arctan2, np.hypot, np.remainder]


@SETTINGS
@given(data=st.data(), f=st.sampled_from(UFUNCS),
       dt=st.sampled_from([np.float32, np.float64, np.int32, np.bool_]))
def test_ufuncs_on_device_data_match_numpy(dev, data, f, dt) -> None:
    bshapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=f.nin, min_dims=1,
                                                          max_dims=3, max_side=4))
    arrays = [data.draw(hnp.arrays(dt, sh, elements=_data(dt) if dt != np.bool_ else None))
              for sh in bshapes.input_shapes]
    operands: list[Any] = [x.copy() for x in arrays]
    if f.nin == 2 and data.draw(st.booleans()):
        operands[1] = arrays[1] = data.draw(st.sampled_from([2, 0.5, True]))  # a Python scalar
    with np.errstate(all="ignore"):
        try:
            want = f(*operands)
        except (TypeError, ValueError) as e:  # numpy refuses: so does hostarray
            with pytest.raises(type(e)):
                f(*[device_newest(v, dev) if isinstance(v, np.ndarray) else v
                    for v in arrays])
            return
    xs = [device_newest(v, dev) if isinstance(v, np.ndarray) else v for v in arrays]
    ha.reset_stats()
    got = f(*xs)
    s = ha.stats()
    if s.host_fallbacks == 0:  # on the device, nothing came back
        assert s.device_ops == 1 and s.bytes_acquired == 0, s
    else:  # what the device path leaves to the host (its registry's note: integer powers)
        assert s.host_fallbacks == 1 and s.device_ops == 0, s
    check(got, want, exact=f not in (np.exp, np.arctan2, np.hypot, np.power))


@SETTINGS
@given(data=st.data(), f=st.sampled_from([np.add, np.multiply, np.maximum, np.minimum,
                                          np.logical_and, np.logical_or]),
       axis=st.sampled_from([0, 1, -1, None, (0, 1)]), keepdims=st.booleans(),
       dt=st.sampled_from([np.float32, np.int32, np.bool_]))
def test_ufunc_reduce_and_accumulate_match_numpy(dev, data, f, axis, keepdims, dt) -> None:
    a = data.draw(hnp.arrays(dt, shapes, elements=_data(dt) if dt != np.bool_ else None))
    x = device_newest(a, dev)
    ha.reset_stats()
    got = f.reduce(x, axis=axis, keepdims=keepdims)
    assert ha.stats().bytes_acquired == 0 and ha.stats().device_ops == 1, ha.stats()
    check(got, f.reduce(a.copy(), axis=axis, keepdims=keepdims), exact=dt != np.float32)
    check(f.reduce(x), f.reduce(a.copy()), exact=dt != np.float32)  # numpy's default axis 0
    if f in (np.add, np.multiply) and dt != np.bool_ and type(axis) is int:
        ha.reset_stats()
        got = f.accumulate(x, axis=axis)
        assert ha.stats().bytes_acquired == 0 and ha.stats().device_ops == 1
        check(got, f.accumulate(a.copy(), axis=axis), exact=dt != np.float32)


# -- out=, and what keeps the host path -----------------------------------------------------------

def test_out_on_the_device_is_written_there(dev) -> None:
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = device_newest(a, dev)
    z = device_newest(np.zeros((4, 6), np.float32), dev)
    o = device_newest(np.zeros(6, np.float32), dev)
    ha.reset_stats()
    assert np.multiply(x, 2, out=z) is z
    assert np.sum(x, axis=0, out=o) is o
    assert np.add(x, z, out=x) is x  # in place, an operand also the output
    s = ha.stats()
    assert s.device_ops >= 3 and s.bytes_acquired == 0 and s.host_fallbacks == 0, s
    np.testing.assert_array_equal(np.asarray(z), a * 2)
    np.testing.assert_array_equal(np.asarray(o), a.sum(axis=0))
    np.testing.assert_array_equal(np.asarray(x), a * 3)


def test_arguments_the_namespace_lacks_keep_numpys_answer_counted_as_fallbacks(dev) -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    cases = [
        (lambda v: np.sum(v, initial=10.0, where=v > 0), False),
        (lambda v: np.prod(v, initial=1.5, dtype=np.int64), True),  # a float initial, ints
        (lambda v: np.max(v, axis=0, where=v > 0, initial=-1.0), True),
        (lambda v: np.add(v, 1, where=v > 0, out=np.zeros_like(a)), True),
        (lambda v: np.mean(v, axis=0, dtype=np.int64), True),
        (lambda v: np.add.reduce(v, initial=3.0), False),
    ]
    for call, exact in cases:
        want = call(a.copy())
        x = device_newest(a, dev)
        ha.reset_stats()
        got = call(x)
        assert ha.stats().host_fallbacks == 1, ha.stats()
        if isinstance(got, ha.HostPtrArray):
            got = np.asarray(got)
        np.testing.assert_allclose(got, want, rtol=0 if exact else 1e-6)


@SETTINGS
@given(data=st.data(), dt=st.sampled_from([np.float32, np.int32, np.uint8, np.float64]),
       axis=st.sampled_from([None, 0, 1]))
def test_initial_and_where_on_the_device_match_numpy(dev, data, dt, axis) -> None:
    a = data.draw(hnp.arrays(dt, shapes, elements=_data(dt) if dt != np.uint8 else None))
    m = data.draw(hnp.arrays(np.bool_, a.shape))
    start = data.draw(st.integers(-3, 3) if dt != np.uint8 else st.integers(0, 3))
    calls: list[tuple[Callable[..., Any], bool]] = [
        (lambda v: np.sum(v, axis=axis, initial=start), dt not in (np.float32, np.float64)),
        (lambda v: np.prod(v, axis=axis, initial=start), dt not in (np.float32, np.float64)),
        (lambda v: np.max(v, axis=axis, initial=start), True),
        (lambda v: np.min(v, axis=axis, initial=start), True),
    ]
    for call, exact in calls:
        x = device_newest(a, dev)
        ha.reset_stats()
        got = call(x)
        s = ha.stats()
        assert s.host_fallbacks == 0 and s.bytes_acquired == 0 and s.device_ops >= 2, s
        check(got, call(a.copy()), exact)
    # where= with out= on the device: out keeps its values where the mask is false
    x, mask = device_newest(a, dev), device_newest(m, dev)
    out = device_newest(np.full(a.shape, 7, dt), dev)
    want = np.full(a.shape, 7, dt)
    np.multiply(a, 2, out=want, where=m)
    ha.reset_stats()
    assert np.multiply(x, 2, out=out, where=mask) is out
    s = ha.stats()
    assert s.host_fallbacks == 0 and s.bytes_acquired == 0 and s.device_ops >= 2, s
    np.testing.assert_array_equal(np.asarray(out), want)


def test_a_refused_call_changes_nothing(dev) -> None:
    x = device_newest(np.arange(6, dtype=np.float32), dev)
    out = device_newest(np.zeros(6, np.int8), dev)
    with pytest.raises(TypeError):  # numpy's casting error for float into int8, same_kind
        np.add(x, 1, out=out)
    np.testing.assert_array_equal(np.asarray(out), np.zeros(6, np.int8))
    with pytest.raises(ValueError):
        np.std(x, ddof=1, correction=1)


# -- the results rule -----------------------------------------------------------------------

@pytest.mark.parametrize("path", ["device", "host"])
def test_a_full_reduction_is_a_0d_array_that_works_as_a_number(cl_device, path) -> None:
    old = ha.set_device_compute_threshold(0 if path == "device" else None)
    try:
        ints = device_newest(np.arange(10, dtype=np.int32), cl_device)
        floats = device_newest(np.linspace(0, 1, 9, dtype=np.float64), cl_device)
        ha.reset_stats()
        s, m, b = np.sum(ints), np.mean(floats), ints.max()
        for r in (s, m, b, np.add.reduce(ints), floats.std()):
            assert type(r) is ha.HostPtrArray and r.shape == () and r.device == cl_device
        if path == "device" and cl_device.link != "shared":
            assert ha.stats().bytes_acquired == 0  # nothing moves until the value is used
        assert list(range(s)) == list(range(45)) and list(range(b)) == list(range(9))
        assert "%d" % s == "45" and "%.2f" % m == "0.50"  # noqa: UP031 (what users write)
        assert f"{m:.3f}" == "0.500" and format(s, "03d") == "045"
        assert f"{s}" == "45" and str(b) == "9"
        assert s > 0 and bool(s > 44) and not (s < 0) and (s == 45)
        assert float(m) == 0.5 and int(s) == 45 and bool(s) is True
        assert float(s * 2 + 1) == 91 and float(1.5 * m) == 0.75 and float(s / 2) == 22.5
        assert int(-s) == -45 and int(abs(-s)) == 45 and int(s // 2) == 22
        assert [0, 1, 2][np.argmax(ints[:3])] == 2  # an index, as numpy's integer scalars
        assert round(float(m), 1) == 0.5 and max(float(m), 0.2) == 0.5
        if path == "device" and cl_device.link != "shared":
            assert ha.stats().device_ops >= 3
    finally:
        ha.set_device_compute_threshold(old)


def test_a_ufunc_called_on_0d_operands_keeps_numpys_scalar(dev) -> None:
    x = device_newest(np.arange(4, dtype=np.float32), dev)
    r = np.sin(x[1])
    assert type(r) is np.float32 and r == np.sin(np.float32(1))


# -- a pipeline spelled in numpy: nothing moves before the result is read ------------------------

def test_the_numpy_spelled_pipeline_moves_only_its_result(dev) -> None:
    rng = np.random.default_rng(7)
    a = rng.standard_normal((64, 16)).astype(np.float32)
    w = rng.standard_normal((16, 16)).astype(np.float32)
    x, wd = device_newest(a, dev), device_newest(w, dev)
    ha.reset_stats()
    z = (x - np.mean(x, axis=0)) / np.std(x, axis=0)
    y = np.maximum(np.matmul(z, wd), 0)
    best = np.argmax(y, axis=1)
    s = ha.stats()
    assert s.bytes_acquired == 0 and s.host_fallbacks == 0 and s.device_ops >= 6, s
    za = (a - a.mean(axis=0)) / a.std(axis=0)
    ya = np.maximum(za @ w, 0)
    got = np.asarray(best)
    assert ha.stats().bytes_acquired == best.nbytes  # the host reads the result alone
    near = np.take_along_axis(ya, got[:, None], 1)[:, 0]
    np.testing.assert_allclose(near, ya.max(axis=1), rtol=1e-4, atol=1e-5)


# -- the kept numpy array -------------------------------------------------------------------------

KERNEL = "__kernel void k(__global float *x) { x[get_global_id(0)] += 1; }"


def test_a_kept_numpy_array_warns_once_naming_the_bytes_and_the_remedies(off_shared) -> None:
    prg = ha.Program(KERNEL, device=off_shared)
    a = np.zeros(1 << 12, np.float32)
    x = ha.asarray(a, device=off_shared)  # adopted: a still reaches the memory
    with pytest.warns(PerformanceWarning) as caught:
        prg.k(x.shape, x)
    (w,) = [c for c in caught if c.category is PerformanceWarning]
    e = w.message
    assert isinstance(e, PerformanceWarning) and isinstance(e, UserWarning)
    assert e.nbytes == a.nbytes and e.link == off_shared.link and e.device == off_shared
    assert str(a.nbytes) in str(e) and "del" in str(e) and "copy=True" in str(e)
    assert w.filename == __file__  # the user's line, not hostarray's
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        prg.k(x.shape, x)  # once per array
    assert not [c for c in again if c.category is PerformanceWarning]
    np.testing.assert_array_equal(a, np.full(a.shape, 2, np.float32))
    b = np.zeros(64, np.float32)
    y = ha.asarray(b, device=off_shared)  # another adopted array warns again
    with pytest.warns(PerformanceWarning, match=f"all {b.nbytes} bytes"):
        prg.k(y.shape, y)


def test_no_warning_for_a_copy_a_dropped_array_or_under_a_filter(off_shared) -> None:
    prg = ha.Program(KERNEL, device=off_shared)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = ha.asarray(np.zeros(256, np.float32), device=off_shared, copy=True)
        prg.k(x.shape, x)
        y = ha.asarray(np.zeros(256, np.float32), device=off_shared)  # nobody keeps it
        prg.k(y.shape, y)
    assert not [c for c in caught if c.category is PerformanceWarning]
    a = np.zeros(256, np.float32)
    z = ha.asarray(a, device=off_shared)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=PerformanceWarning)
        prg.k(z.shape, z)
    assert not caught
    assert float(a[0]) == 1.0


def test_never_on_a_shared_link(cl_device) -> None:
    if cl_device.link != "shared":
        pytest.skip("the device's own link is not shared (HOSTARRAY_LINK=copied): the README's "
                    "first run, on the shared link, runs this")
    prg = ha.Program(KERNEL, device=cl_device)
    a = np.zeros(256, np.float32)
    x = ha.asarray(a, device=cl_device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prg.k(x.shape, x)
    assert not [c for c in caught if c.category is PerformanceWarning]
    assert float(a[0]) == 1.0


def test_a_warning_raised_as_an_error_changes_nothing_and_warns_again(off_shared) -> None:
    """Under an "error" filter the launch is refused with nothing changed, the warned
    state included: the next launch under the default filters warns."""
    prg = ha.Program(KERNEL, device=off_shared)
    a = np.zeros(256, np.float32)
    x = ha.asarray(a, device=off_shared)
    before = ha.stats()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PerformanceWarning)
        with pytest.raises(PerformanceWarning):
            prg.k(x.shape, x)
    assert ha.stats().launches == before.launches and float(a[0]) == 0.0
    with pytest.warns(PerformanceWarning):
        prg.k(x.shape, x)
    assert float(np.asarray(x)[0]) == 1.0
