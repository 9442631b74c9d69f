"""SciPy with ``SCIPY_ARRAY_API=1`` (set by this folder's conftest) on HostPtrArray
inputs, compared with the same call on numpy inputs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import hostarray as ha

pytest.importorskip("scipy")

import scipy.cluster.vq as vq  # noqa: E402
import scipy.fft as sfft  # noqa: E402
import scipy.integrate as integrate  # noqa: E402
import scipy.linalg as la  # noqa: E402
import scipy.ndimage as ndi  # noqa: E402
import scipy.signal as sig  # noqa: E402
import scipy.special as sp  # noqa: E402
import scipy.stats as st  # noqa: E402

pytestmark = pytest.mark.usefixtures("scipy_array_api")

rng = np.random.default_rng(1)
DATA = {
    "A": rng.uniform(0.1, 2.0, size=(6, 5)),
    "B": rng.uniform(0.1, 2.0, size=(6, 5)),
    "V": rng.normal(size=32),
    "K": np.array([0.25, 0.5, 0.25]),
    "M": rng.uniform(0.1, 2.0, size=(5, 5)) + 5 * np.eye(5),
}

# SciPy functions that keep the input's namespace: the result must be a HostPtrArray.
KEEPS = {
    "special.erf": lambda d: sp.erf(d["A"]),
    "special.erfc": lambda d: sp.erfc(d["A"]),
    "special.gammaln": lambda d: sp.gammaln(d["A"]),
    "special.digamma": lambda d: sp.digamma(d["A"]),
    "special.expit": lambda d: sp.expit(d["A"]),
    "special.logit": lambda d: sp.logit(d["A"] / 3),
    "special.ndtr": lambda d: sp.ndtr(d["A"]),
    "special.ndtri": lambda d: sp.ndtri(d["A"] / 3),
    "special.xlogy": lambda d: sp.xlogy(d["A"], d["B"]),
    "special.entr": lambda d: sp.entr(d["A"]),
    "special.rel_entr": lambda d: sp.rel_entr(d["A"], d["B"]),
    "special.betaln": lambda d: sp.betaln(d["A"], d["B"]),
    "special.i0e": lambda d: sp.i0e(d["A"]),
    "special.stdtr": lambda d: sp.stdtr(d["A"], d["B"]),
    "special.logsumexp": lambda d: sp.logsumexp(d["A"], axis=1),
    "special.softmax": lambda d: sp.softmax(d["A"], axis=0),
    "special.log_softmax": lambda d: sp.log_softmax(d["A"], axis=1),
    "stats.zscore": lambda d: st.zscore(d["A"], axis=0),
    "stats.skew": lambda d: st.skew(d["A"], axis=0),
    "stats.kurtosis": lambda d: st.kurtosis(d["A"], axis=0),
    "stats.moment": lambda d: st.moment(d["A"], order=3, axis=0),
    "stats.gmean": lambda d: st.gmean(d["A"], axis=0),
    "stats.hmean": lambda d: st.hmean(d["A"], axis=0),
    "stats.pmean": lambda d: st.pmean(d["A"], 2.0, axis=0),
    "stats.variation": lambda d: st.variation(d["A"], axis=0),
    "stats.sem": lambda d: st.sem(d["A"], axis=0),
    "stats.entropy": lambda d: st.entropy(d["A"], axis=0),
    "stats.ttest_ind": lambda d: st.ttest_ind(d["A"], d["B"], axis=0).statistic,
    "stats.ttest_1samp": lambda d: st.ttest_1samp(d["A"], 1.0, axis=0).pvalue,
    "stats.pearsonr": lambda d: st.pearsonr(d["A"][:, 0], d["B"][:, 0]).statistic,
    "stats.describe": lambda d: st.describe(d["A"], axis=0).variance,
    "stats.rankdata": lambda d: st.rankdata(d["A"], axis=0),
    "stats.trim_mean": lambda d: st.trim_mean(d["A"], 0.1, axis=0),
    "stats.quantile": lambda d: st.quantile(d["A"], 0.3, axis=0),
    "stats.bartlett": lambda d: st.bartlett(d["A"][:, 0], d["B"][:, 0]).statistic,
    "fft.fft": lambda d: sfft.fft(d["V"]),
    "fft.ifft": lambda d: sfft.ifft(d["V"]),
    "fft.rfft": lambda d: sfft.rfft(d["V"]),
    "fft.irfft": lambda d: sfft.irfft(sfft.rfft(d["V"])),
    "fft.fft2": lambda d: sfft.fft2(d["A"]),
    "fft.fftn": lambda d: sfft.fftn(d["A"]),
    "fft.fftshift": lambda d: sfft.fftshift(d["V"]),
    "fft.dct": lambda d: sfft.dct(d["V"]),
    "signal.convolve": lambda d: sig.convolve(d["V"], d["K"]),
    "signal.correlate": lambda d: sig.correlate(d["V"], d["K"]),
    "signal.fftconvolve": lambda d: sig.fftconvolve(d["V"], d["K"]),
    "signal.oaconvolve": lambda d: sig.oaconvolve(d["V"], d["K"]),
    "signal.convolve2d": lambda d: sig.convolve2d(d["A"], d["B"][:2, :2]),
    "signal.lfilter": lambda d: sig.lfilter(d["K"], d["K"][1:2] * 2, d["V"]),
    "signal.detrend": lambda d: sig.detrend(d["V"]),
    "signal.hilbert": lambda d: sig.hilbert(d["V"]),
    "signal.savgol_filter": lambda d: sig.savgol_filter(d["V"], 5, 2),
    "signal.medfilt": lambda d: sig.medfilt(d["V"], 3),
    "signal.resample": lambda d: sig.resample(d["V"], 16),
    "linalg.block_diag": lambda d: la.block_diag(d["M"], d["M"]),
    "integrate.trapezoid": lambda d: integrate.trapezoid(d["A"], axis=0),
    "integrate.cumulative_trapezoid": lambda d: integrate.cumulative_trapezoid(d["A"], axis=0),
    "cluster.vq.whiten": lambda d: vq.whiten(d["A"]),
    "ndimage.gaussian_filter": lambda d: ndi.gaussian_filter(d["A"], 1.0),
    "ndimage.median_filter": lambda d: ndi.median_filter(d["A"], 3),
    "ndimage.uniform_filter": lambda d: ndi.uniform_filter(d["A"], 3),
    "ndimage.sobel": lambda d: ndi.sobel(d["A"]),
    "ndimage.zoom": lambda d: ndi.zoom(d["A"], 2),
}
# SciPy functions that convert their input to numpy (through __array__): numpy results.
CONVERTS = {
    "linalg.solve": lambda d: la.solve(d["M"], d["A"][:5, 0]),
    "linalg.inv": lambda d: la.inv(d["M"]),
    "linalg.det": lambda d: la.det(d["M"]),
    "linalg.eigh": lambda d: la.eigh(d["M"] + d["M"].T)[0],
    "linalg.svd": lambda d: la.svd(d["M"])[1],
    "linalg.qr": lambda d: la.qr(d["M"])[1],
    "linalg.cholesky": lambda d: la.cholesky(d["M"] @ d["M"].T),
    "linalg.expm": lambda d: la.expm(d["M"] / 10),
    "linalg.lstsq": lambda d: la.lstsq(d["M"], d["A"][:5, 0])[0],
    "linalg.pinv": lambda d: la.pinv(d["M"]),
    "linalg.lu_factor": lambda d: la.lu_factor(d["M"])[0],
    "linalg.logm": lambda d: la.logm(d["M"]),
    "stats.norm.pdf": lambda d: st.norm.pdf(d["A"]),
    "signal.welch": lambda d: sig.welch(d["V"], nperseg=16)[1],
    "integrate.simpson": lambda d: integrate.simpson(d["A"], axis=0),
}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _run(f, device=None):
    want = f(DATA)
    got = f({k: ha.asarray(v.copy(), device=device) for k, v in DATA.items()})
    return got, np.asarray(want)


@pytest.mark.parametrize("name", sorted(KEEPS))
def test_functions_keeping_the_namespace(name) -> None:
    got, want = _run(KEEPS[name])
    assert isinstance(got, ha.HostPtrArray), type(got)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CONVERTS))
def test_functions_converting_to_numpy(name) -> None:
    got, want = _run(CONVERTS[name])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-7, atol=1e-12)


SRC = r"""
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void scale(__global double *x, const double a) { x[get_global_id(0)] *= a; }
"""


@pytest.mark.device
@pytest.mark.parametrize("name", ["special.erf", "stats.zscore", "fft.fft", "signal.convolve",
                                  "linalg.solve", "special.logsumexp"])
def test_device_arrays_written_by_a_kernel(name, cl_device) -> None:
    f = {**KEEPS, **CONVERTS}[name]
    want = np.asarray(f({k: v * 1.5 for k, v in DATA.items()}))
    prg = ha.Program(SRC, device=cl_device)
    inputs = {}
    for k, v in DATA.items():
        x = ha.asarray(v, device=cl_device, copy=True)
        prg.scale(x.size, x.reshape(-1), 1.5)  # newest data on the device
        inputs[k] = x
    assert all(v._s.host_stale for v in inputs.values())
    ha.reset_stats()
    got = f(inputs)
    assert ha.stats().acquires >= 1  # SciPy's reads acquired the kernel's writes
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-7, atol=1e-12)
    if name in KEEPS:
        assert isinstance(got, ha.HostPtrArray)
        # scipy.special's ufuncs and signal.convolve compute on numpy and return
        # xp.asarray(out) without device=: the result lands on the default device.
        lost = name in ("special.erf", "signal.convolve")
        assert got.device == (ha.default_device() if lost else cl_device)
