"""The fft extension against array_api_strict (which wraps numpy.fft): transforms with n/s,
axis/axes and every norm, frequency helpers with dtype/device, shifts."""

from __future__ import annotations

import array_api_strict as xps
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hostarray as ha

from . import strategies as strat
from .helpers import differential


def fft():
    m = getattr(ha, "fft", None)
    if m is None:
        pytest.fail("hostarray.fft is missing")
    return m


def fft_diff(name, *args, **kw):
    return differential(name, *args, _module=(fft(), xps.fft), **kw)


def _tol(dt) -> float:
    return 1e-4 if np.dtype(dt) in (np.float32, np.complex64) else 1e-10


norms = st.sampled_from(["backward", "ortho", "forward"])


@pytest.mark.parametrize("name,kind", [("fft", "complex floating"),
                                       ("ifft", "complex floating"),
                                       ("rfft", "real floating"), ("irfft", "complex floating"),
                                       ("hfft", "complex floating"),
                                       ("ihfft", "real floating")])
@given(data=st.data())
def test_1d(name, kind, data) -> None:
    dt = data.draw(strat.dtypes(kind), label="dtype")
    x = data.draw(strat.arrays(dt, min_dims=1, max_dims=2, min_side=1, finite=True,
                               min_value=-10, max_value=10), label="x")
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    n = data.draw(st.none() | st.integers(1, 6), label="n")
    if name in ("irfft", "hfft") and n is None and x.shape[axis] < 2:
        n = 2
    fft_diff(name, x, n=n, axis=axis, norm=data.draw(norms), _rtol=_tol(dt), _atol=_tol(dt))


@pytest.mark.parametrize("name,kind", [("fftn", "complex floating"),
                                       ("ifftn", "complex floating"),
                                       ("rfftn", "real floating"),
                                       ("irfftn", "complex floating")])
@given(data=st.data())
def test_nd(name, kind, data) -> None:
    dt = data.draw(strat.dtypes(kind), label="dtype")
    x = data.draw(strat.arrays(dt, min_dims=1, max_dims=3, min_side=2, max_side=4,
                               finite=True, min_value=-10, max_value=10), label="x")
    axes = data.draw(st.none() | st.permutations(range(x.ndim)).flatmap(
        lambda p: st.integers(1, len(p)).map(lambda k: tuple(p[:k]))), label="axes")
    s = None
    if axes is not None and data.draw(st.booleans(), label="with s"):
        s = tuple(data.draw(st.integers(2, 5)) for _ in axes)
    fft_diff(name, x, s=s, axes=axes, norm=data.draw(norms), _rtol=_tol(dt), _atol=_tol(dt))


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
@given(n=st.integers(1, 10), d=st.sampled_from([1.0, 0.5, 2.0]),
       dt=st.sampled_from([None, "float32", "float64"]))
def test_freq(name, n, d, dt) -> None:
    kw = {"d": d}
    if dt:
        kw["dtype"] = np.dtype(dt)
    r = fft_diff(name, n, _rtol=1e-6, **kw)
    assert r.dtype == np.dtype(dt or "float64")


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("dt", ["int32", "bool", "complex64"])
def test_freq_dtype_must_be_real_floating(name: str, dt: str) -> None:
    # the standard: dtype "must be a real-valued floating-point data type"
    with pytest.raises(ValueError, match="real floating-point"):
        getattr(ha.fft, name)(4, dtype=getattr(ha, dt))


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
@given(data=st.data())
def test_shift(name, data) -> None:
    x = data.draw(strat.arrays(strat.dtypes("floating"), min_dims=1), label="x")
    axes = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1)
                     | st.lists(st.integers(0, x.ndim - 1), unique=True, min_size=1)
                     .map(tuple), label="axes")
    fft_diff(name, x, axes=axes)


def test_real_input_to_complex_transform_dtype() -> None:
    x = ha.asarray(np.arange(4, dtype=np.complex64))
    assert fft().fft(x).dtype == ha.complex64  # precision kept
    assert fft().rfft(ha.asarray(np.arange(4, dtype=np.float32))).dtype == ha.complex64
    assert fft().irfft(fft().rfft(ha.asarray(np.arange(4.0)))).dtype == ha.float64


@pytest.mark.device
def test_fft_on_device(cl_device) -> None:
    x = ha.asarray(np.arange(8, dtype=np.complex128), device=cl_device)
    f = fft()
    for r in (f.fft(x), f.ifft(x), f.fftn(x), f.fftshift(x), f.hfft(x),
              f.rfft(ha.asarray(np.arange(8.0), device=cl_device))):
        assert r.device == cl_device
    assert f.fftfreq(4, device=cl_device).device == cl_device
    assert f.rfftfreq(4, device=cl_device).device == cl_device
    np.testing.assert_allclose(np.asarray(f.ifft(f.fft(x))), np.arange(8), atol=1e-12)
