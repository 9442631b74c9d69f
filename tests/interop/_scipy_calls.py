"""The SciPy calls the interop tests make, on one set of inputs (shared by ``test_scipy.py``,
which compares values, and ``test_scipy_devices.py``, which checks where results land).

Imported by test modules only, after this folder's conftest set ``SCIPY_ARRAY_API=1``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.cluster.vq as vq
import scipy.fft as sfft
import scipy.integrate as integrate
import scipy.linalg as la
import scipy.ndimage as ndi
import scipy.signal as sig
import scipy.special as sp
import scipy.stats as st

rng = np.random.default_rng(1)
DATA = {
    "A": rng.uniform(0.1, 2.0, size=(6, 5)),
    "B": rng.uniform(0.1, 2.0, size=(6, 5)),
    "V": rng.normal(size=32),
    "K": np.array([0.25, 0.5, 0.25]),
    "M": rng.uniform(0.1, 2.0, size=(5, 5)) + 5 * np.eye(5),
}

# "module.function" (below scipy) -> the call on a dict like DATA
CALLS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "special.logsumexp": lambda d: sp.logsumexp(d["A"], axis=1),
    "special.softmax": lambda d: sp.softmax(d["A"], axis=0),
    "special.log_softmax": lambda d: sp.log_softmax(d["A"], axis=1),
    "special.xlogy": lambda d: sp.xlogy(d["A"], d["B"]),
    "special.rel_entr": lambda d: sp.rel_entr(d["A"], d["B"]),
    "special.erf": lambda d: sp.erf(d["A"]),
    "special.erfc": lambda d: sp.erfc(d["A"]),
    "special.gammaln": lambda d: sp.gammaln(d["A"]),
    "special.digamma": lambda d: sp.digamma(d["A"]),
    "special.expit": lambda d: sp.expit(d["A"]),
    "special.logit": lambda d: sp.logit(d["A"] / 3),
    "special.ndtr": lambda d: sp.ndtr(d["A"]),
    "special.ndtri": lambda d: sp.ndtri(d["A"] / 3),
    "special.entr": lambda d: sp.entr(d["A"]),
    "special.betaln": lambda d: sp.betaln(d["A"], d["B"]),
    "special.i0e": lambda d: sp.i0e(d["A"]),
    "special.stdtr": lambda d: sp.stdtr(d["A"], d["B"]),
    "stats.zscore": lambda d: st.zscore(d["A"], axis=0),
    "stats.skew": lambda d: st.skew(d["A"], axis=0),
    "stats.kurtosis": lambda d: st.kurtosis(d["A"], axis=0),
    "stats.moment": lambda d: st.moment(d["A"], order=3, axis=0),
    "stats.gmean": lambda d: st.gmean(d["A"], axis=0),
    "stats.hmean": lambda d: st.hmean(d["A"], axis=0),
    "stats.pmean": lambda d: st.pmean(d["A"], 2.0, axis=0),
    "stats.variation": lambda d: st.variation(d["A"], axis=0),
    "stats.sem": lambda d: st.sem(d["A"], axis=0),
    "stats.ttest_ind": lambda d: st.ttest_ind(d["A"], d["B"], axis=0).statistic,
    "stats.pearsonr": lambda d: st.pearsonr(d["A"][:, 0], d["B"][:, 0]).statistic,
    "stats.describe": lambda d: st.describe(d["A"], axis=0).variance,
    "stats.rankdata": lambda d: st.rankdata(d["A"], axis=0),
    "stats.trim_mean": lambda d: st.trim_mean(d["A"], 0.1, axis=0),
    "stats.quantile": lambda d: st.quantile(d["A"], 0.3, axis=0),
    "stats.bartlett": lambda d: st.bartlett(d["A"][:, 0], d["B"][:, 0]).statistic,
    # the p-values: SciPy computes them with its special functions (the default device)
    "stats.ttest_ind(...).pvalue": lambda d: st.ttest_ind(d["A"], d["B"], axis=0).pvalue,
    "stats.pearsonr(...).pvalue": lambda d: st.pearsonr(d["A"][:, 0], d["B"][:, 0]).pvalue,
    "stats.bartlett(...).pvalue": lambda d: st.bartlett(d["A"][:, 0], d["B"][:, 0]).pvalue,
    "stats.entropy": lambda d: st.entropy(d["A"], axis=0),
    "stats.ttest_1samp": lambda d: st.ttest_1samp(d["A"], 1.0, axis=0).statistic,
    "stats.ttest_1samp(...).pvalue": lambda d: st.ttest_1samp(d["A"], 1.0, axis=0).pvalue,
    "stats.norm.pdf": lambda d: st.norm.pdf(d["A"]),
    "fft.fft": lambda d: sfft.fft(d["V"]),
    "fft.ifft": lambda d: sfft.ifft(d["V"]),
    "fft.rfft": lambda d: sfft.rfft(d["V"]),
    "fft.irfft": lambda d: sfft.irfft(sfft.rfft(d["V"])),
    "fft.fft2": lambda d: sfft.fft2(d["A"]),
    "fft.fftn": lambda d: sfft.fftn(d["A"]),
    "fft.fftshift": lambda d: sfft.fftshift(d["V"]),
    "fft.dct": lambda d: sfft.dct(d["V"]),
    "signal.fftconvolve": lambda d: sig.fftconvolve(d["V"], d["K"]),
    "signal.oaconvolve": lambda d: sig.oaconvolve(d["V"], d["K"]),
    "signal.hilbert": lambda d: sig.hilbert(d["V"]),
    "signal.resample": lambda d: sig.resample(d["V"], 16),
    "signal.convolve": lambda d: sig.convolve(d["V"], d["K"]),
    "signal.correlate": lambda d: sig.correlate(d["V"], d["K"]),
    "signal.convolve2d": lambda d: sig.convolve2d(d["A"], d["B"][:2, :2]),
    "signal.lfilter": lambda d: sig.lfilter(d["K"], d["K"][1:2] * 2, d["V"]),
    "signal.detrend": lambda d: sig.detrend(d["V"]),
    "signal.savgol_filter": lambda d: sig.savgol_filter(d["V"], 5, 2),
    "signal.medfilt": lambda d: sig.medfilt(d["V"], 3),
    "signal.welch": lambda d: sig.welch(d["V"], nperseg=16)[1],
    "ndimage.gaussian_filter": lambda d: ndi.gaussian_filter(d["A"], 1.0),
    "ndimage.median_filter": lambda d: ndi.median_filter(d["A"], 3),
    "ndimage.uniform_filter": lambda d: ndi.uniform_filter(d["A"], 3),
    "ndimage.sobel": lambda d: ndi.sobel(d["A"]),
    "ndimage.zoom": lambda d: ndi.zoom(d["A"], 2),
    "linalg.block_diag": lambda d: la.block_diag(d["M"], d["M"]),
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
    "integrate.trapezoid": lambda d: integrate.trapezoid(d["A"], axis=0),
    "integrate.cumulative_trapezoid":
        lambda d: integrate.cumulative_trapezoid(d["A"], axis=0),
    "integrate.simpson": lambda d: integrate.simpson(d["A"], axis=0),
    "cluster.vq.whiten": lambda d: vq.whiten(d["A"]),
}
