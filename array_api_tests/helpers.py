"""Differential checking: run one call on hostarray and on array_api_strict (the standard's
reference) with the same numpy-drawn inputs, then compare types, shapes, dtypes, devices and
values (NaNs equal NaNs, signed zeros compared by sign where asked).
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable
from typing import Any

import array_api_strict as xps
import numpy as np
import pytest
from array_api_strict._array_object import Array as StrictArray
from hypothesis import reject

import hostarray as ha
from hostarray import HostPtrArray
from hostarray._introspect import state

HOST = ha.device("cpu")

# per test: differential calls, and those the reference rejected (conftest reports tests
# where most drawn inputs were rejected: such a test checks less than it seems to)
CALLS: Counter = Counter()
REJECTED: Counter = Counter()


# HOSTARRAY_SUITE_DEVICE=opencl (or any device spec) puts the inputs of every differential
# call on that device: each result must then be on it too, with the host's values.
SUITE_DEVICE = os.environ.get("HOSTARRAY_SUITE_DEVICE") or None

# Device-compute mode (HOSTARRAY_TEST_DEVICE_COMPUTE=1, switched on by conftest.py through
# device_compute_mode): every input goes to this OpenCL device and a kernel makes it
# device-newest, so the namespace's device path (forced for every size) computes what the
# reference computes on the host.
_NEWEST: list[Any] = [None]  # [the device] or [None]: the mode is off
# name -> [calls, calls that ran device kernels, those that acquired before the result was
# read, calls the device path declined (host_fallbacks)]: conftest.py prints it, so a run
# shows what the device path really covered
DEVICE_CALLS: dict[str, list[int]] = {}

# Non-const pointer: the launch records a device write of every byte, so the array's newest
# bytes are on the device (host-stale) afterwards.  ``void *`` takes any dtype.
# Launched in groups of _GROUP (a global size rounded up, the kernel returning past ``n``):
# one local size whatever the array's size, so that a CPU driver such as PoCL, which
# compiles each kernel anew per local size, compiles it once.
_TOUCH_SRC = """__kernel void touch(__global void *p, const ulong n) {
    __global uchar *b = (__global uchar *)p;
    size_t i = get_global_id(0);
    if (i < n) b[i] = b[i];
}"""
_GROUP = 64
_touch: dict[Any, Any] = {}


def device_compute_mode(dev: Any) -> None:
    """Send every differential input to ``dev`` and make it device-newest (``None``: off)."""
    _NEWEST[0] = dev


def make_device_newest(x: HostPtrArray) -> HostPtrArray:
    """Run a no-op read-write kernel over ``x`` (on an OpenCL device): afterwards its newest
    bytes are on the device and the host's copy is stale."""
    if x.size == 0:
        return x  # nothing to write: an empty array is current everywhere
    dev = x.device
    prog = _touch.get(dev)
    if prog is None:
        prog = _touch[dev] = ha.Program(_TOUCH_SRC, device=dev)
    n = x.size * x.dtype.itemsize
    prog.touch(-(-n // _GROUP) * _GROUP, x, n, local_size=_GROUP)
    st = state(x)
    assert st.host_stale and not st.host_current, \
        "the touch kernel did not leave the input device-newest"
    return x


def tame_complex(x: Any) -> Any:
    """``x`` (a numpy array or a Python scalar) with complex values that are non-finite, or
    whose products would overflow, made 1.

    numpy's complex loops disagree there by code path: ``(m+mj) * (2+1j)`` in complex64 (m
    the float32 maximum) gives ``inf+infj`` in one loop and ``m+infj`` in another, and
    ``(m+mj) * (m+mj)`` gives ``-inf+infj`` or ``nan``; neither answer is the standard's to
    check (special values are in test_special_cases.py). Other values pass through."""
    if isinstance(x, complex):
        big = float(np.sqrt(np.finfo(np.float32).max)) / 4
        ok = math.isfinite(abs(x)) and abs(x.real) < big and abs(x.imag) < big
        return x if ok else 1 + 0j
    if not isinstance(x, np.ndarray) or x.dtype.kind != "c":
        return x
    big = np.sqrt(np.finfo(x.dtype).max) / 4
    ok = np.isfinite(x) & (np.abs(x.real) < big) & (np.abs(x.imag) < big)
    return np.asarray(np.where(ok, x, 1), dtype=x.dtype)


def _current_test() -> str:
    return os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0]


def ha_fn(name: str, module: Any = ha) -> Callable:
    """``module.name`` of hostarray, failing the test (not skipping) when it is missing."""
    modname = getattr(module, "__name__", str(module))
    f = getattr(module, name, None)
    if f is None:
        pytest.fail(f"{modname}.{name} is missing (array API 2025.12 requires it)")
    return f


def strict_fn(name: str, module: Any = xps) -> Callable:
    return getattr(module, name)


def to_ha(a: Any, device: Any = None) -> Any:
    """numpy arrays (also inside lists/tuples) -> HostPtrArrays with their own copy (made
    device-newest on an OpenCL ``device`` in device-compute mode)."""
    if isinstance(a, np.ndarray):
        x = ha.asarray(a.copy(), device=device)
        if _NEWEST[0] is not None and x.device.framework == "opencl":
            make_device_newest(x)
        return x
    if isinstance(a, (list, tuple)):
        return type(a)(to_ha(v, device) for v in a)
    return a


def suite_input(a: np.ndarray) -> HostPtrArray:
    """``a`` as an input of a test that calls hostarray directly (operators, special cases):
    a host HostPtrArray, or in device-compute mode one on the device, made device-newest."""
    return to_ha(a, _NEWEST[0])


def suite_device() -> Any:
    """Where results computed from :func:`suite_input` inputs belong."""
    return HOST if _NEWEST[0] is None else _NEWEST[0]


def to_strict(a: Any) -> Any:
    """numpy arrays -> array_api_strict arrays, numpy dtypes -> array_api_strict dtypes."""
    if isinstance(a, np.ndarray):
        return xps.asarray(a.copy())
    if isinstance(a, np.dtype):
        return getattr(xps, a.name)
    if isinstance(a, (list, tuple)):
        return type(a)(to_strict(v) for v in a)
    return a


def to_numpy(x: Any) -> np.ndarray:
    return np.asarray(x)


def _tol(dt: np.dtype, rtol: float | None) -> tuple[float, float]:
    if rtol is not None:
        return rtol, rtol
    if dt.kind in "fc":
        eps = float(np.finfo(dt).eps)
        return 8 * eps, 8 * eps
    return 0.0, 0.0


def assert_values(got: np.ndarray, want: np.ndarray, *, rtol: float | None = None,
                  atol: float | None = None, signed_zeros: bool = False,
                  msg: str = "", scale: float | None = None) -> None:
    """Elementwise equality with NaN == NaN; floats within a few ulps unless told otherwise."""
    assert got.shape == want.shape, f"{msg}: shape {got.shape} != {want.shape}"
    if got.dtype.kind in "biu" and want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=msg)
        return
    r, a = _tol(np.result_type(got.dtype, want.dtype), rtol)
    if atol is not None:
        a = atol
    if got.dtype.kind == "c" or want.dtype.kind == "c":
        # complex results are accurate normwise: a part may cancel ((a+bj)(c+dj) has real
        # part ac - bd), so both parts are compared on the scale of the complex magnitudes
        mag = np.abs(want)
        fin = np.isfinite(mag)
        cscale = max(1.0, float(np.max(mag[fin]))) if fin.any() else 1.0
        assert_values(np.asarray(got.real), np.asarray(want.real), rtol=r, atol=a,
                      signed_zeros=signed_zeros, msg=msg + " (real part)", scale=cscale)
        assert_values(np.asarray(got.imag), np.asarray(want.imag), rtol=r, atol=a,
                      signed_zeros=signed_zeros, msg=msg + " (imaginary part)", scale=cscale)
        return
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=msg + " (NaN positions)")
    np.testing.assert_array_equal(np.isposinf(g), np.isposinf(w), err_msg=msg + " (+inf)")
    np.testing.assert_array_equal(np.isneginf(g), np.isneginf(w), err_msg=msg + " (-inf)")
    fin = np.isfinite(w)
    # a few ulps of the result dtype, plus a floor near zero scaled by the operands' size
    if scale is None:
        scale = max(1.0, float(np.max(np.abs(w[fin])))) if fin.any() else 1.0
    np.testing.assert_allclose(g[fin], w[fin], rtol=r, atol=a * scale, err_msg=msg)
    if signed_zeros:
        z = fin & (w == 0)
        np.testing.assert_array_equal(np.signbit(g[z]), np.signbit(w[z]),
                                      err_msg=msg + " (sign of zero)")


def assert_like(got: Any, want: Any, *, device: Any = HOST, dtype: Any = None,
                rtol: float | None = None, atol: float | None = None,
                signed_zeros: bool = False, values: bool = True, msg: str = "") -> None:
    """``got`` (hostarray result) has the structure, dtypes, shapes and values of ``want``
    (array_api_strict's result), and its arrays are on ``device``."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple), f"{msg}: expected a tuple, got {type(got).__name__}"
        assert len(got) == len(want), f"{msg}: {len(got)} results, expected {len(want)}"
        if hasattr(want, "_fields"):
            assert getattr(got, "_fields", None) == want._fields, \
                f"{msg}: namedtuple fields {getattr(got, '_fields', None)} != {want._fields}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_like(g, w, device=device, rtol=rtol, atol=atol, signed_zeros=signed_zeros,
                        values=values, msg=f"{msg}[{i}]")
        return
    if isinstance(want, StrictArray):
        assert isinstance(got, HostPtrArray), \
            f"{msg}: expected a HostPtrArray, got {type(got).__name__}"
        w = to_numpy(want)
        want_dt = np.dtype(w.dtype) if dtype is None else np.dtype(dtype)
        assert got.dtype == want_dt, f"{msg}: dtype {got.dtype}, expected {want_dt}"
        assert got.shape == w.shape, f"{msg}: shape {got.shape}, expected {w.shape}"
        if device is not None:
            assert got.device == device, f"{msg}: result on {got.device}, inputs on {device}"
        if values:
            assert_values(to_numpy(got), w, rtol=rtol, atol=atol, signed_zeros=signed_zeros,
                          msg=msg)
        return
    if isinstance(want, float) and math.isnan(want):
        assert isinstance(got, float) and math.isnan(got), f"{msg}: {got!r} != nan"
        return
    assert type(got) is type(want) or (isinstance(want, (int, float)) and
                                       isinstance(got, (int, float))
                                       and not isinstance(got, bool)), \
        f"{msg}: {type(got).__name__} result, expected {type(want).__name__}"
    assert got == want, f"{msg}: {got!r} != {want!r}"


def differential(name: str, *args: Any, _module: tuple[Any, Any] = (ha, xps),
                 _device: Any = None, _check: Callable | None = None,
                 _rtol: float | None = None, _atol: float | None = None,
                 _signed_zeros: bool = False, **kwargs: Any) -> Any:
    """Call ``name`` on hostarray and on array_api_strict with the numpy ``args``; compare.

    Inputs the reference rejects (an exception) are rejected from the hypothesis run:
    the question is only whether hostarray agrees where the standard is defined. Options
    start with ``_`` so they never clash with the function's own keywords. The hostarray
    result is returned (``_check(got, want)`` replaces the default comparison)."""
    sfn = strict_fn(name, _module[1])
    test = _current_test()
    CALLS[test] += 1
    with np.errstate(all="ignore"):
        try:
            want = sfn(*to_strict(args), **{k: to_strict(v) for k, v in kwargs.items()})
        except Exception:
            REJECTED[test] += 1
            reject()
    f = ha_fn(name, _module[0])
    if _device is None:
        if _NEWEST[0] is not None:
            _device = _NEWEST[0]
        elif SUITE_DEVICE is not None:
            _device = ha.device(SUITE_DEVICE)
    ha_args = to_ha(args, _device)
    ha_kwargs = {k: to_ha(v, _device) for k, v in kwargs.items()}
    before = ha.stats()
    with np.errstate(all="ignore"):
        got = f(*ha_args, **ha_kwargs)
    if _NEWEST[0] is not None:
        _count_device_call(name, before, ha.stats())
    # results follow the inputs' device; without array inputs they go to the default device
    expected = (ha.device(_device) if _device is not None and _has_array((args, kwargs))
                else ha.default_device())
    if _check is not None:
        _check(got, want)
    else:
        assert_like(got, want, device=expected, rtol=_rtol, atol=_atol,
                    signed_zeros=_signed_zeros, msg=name)
    return got


def _has_array(a: Any) -> bool:
    if isinstance(a, np.ndarray):
        return True
    if isinstance(a, dict):
        return any(_has_array(v) for v in a.values())
    if isinstance(a, (list, tuple)):
        return any(_has_array(v) for v in a)
    return False


def _count_device_call(name: str, before: Any, after: Any) -> None:
    """Record whether the call ran on the device and acquired anything before its result
    was read (the device path acquires nothing)."""
    row = DEVICE_CALLS.setdefault(name, [0, 0, 0, 0])
    row[0] += 1
    if after.host_fallbacks > before.host_fallbacks:
        row[3] += 1
    if after.device_ops > before.device_ops:
        row[1] += 1
        if after.bytes_acquired > before.bytes_acquired:
            row[2] += 1
