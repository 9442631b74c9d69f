"""Which device SciPy's results land on, for inputs attached to an OpenCL device: the table
of ``docs/interop.md`` ("Which device SciPy's results are on") is read and every row checked
against the installed SciPy, so the page and SciPy can't drift apart silently."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

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

PAGE = Path(__file__).resolve().parents[2] / "docs" / "interop.md"
OUTCOMES = ("device", "default", "numpy")  # the table's three result columns, in order

rng = np.random.default_rng(7)
DATA = {
    "A": rng.uniform(0.1, 2.0, size=(6, 5)),
    "B": rng.uniform(0.1, 2.0, size=(6, 5)),
    "V": rng.normal(size=32),
    "K": np.array([0.25, 0.5, 0.25]),
    "M": rng.uniform(0.1, 2.0, size=(5, 5)) + 5 * np.eye(5),
}

CALLS = {
    "scipy.special.logsumexp": lambda d: sp.logsumexp(d["A"], axis=1),
    "scipy.special.softmax": lambda d: sp.softmax(d["A"], axis=0),
    "scipy.special.log_softmax": lambda d: sp.log_softmax(d["A"], axis=1),
    "scipy.special.xlogy": lambda d: sp.xlogy(d["A"], d["B"]),
    "scipy.special.rel_entr": lambda d: sp.rel_entr(d["A"], d["B"]),
    "scipy.special.erf": lambda d: sp.erf(d["A"]),
    "scipy.special.erfc": lambda d: sp.erfc(d["A"]),
    "scipy.special.gammaln": lambda d: sp.gammaln(d["A"]),
    "scipy.special.digamma": lambda d: sp.digamma(d["A"]),
    "scipy.special.expit": lambda d: sp.expit(d["A"]),
    "scipy.special.logit": lambda d: sp.logit(d["A"] / 3),
    "scipy.special.ndtr": lambda d: sp.ndtr(d["A"]),
    "scipy.special.ndtri": lambda d: sp.ndtri(d["A"] / 3),
    "scipy.special.entr": lambda d: sp.entr(d["A"]),
    "scipy.special.betaln": lambda d: sp.betaln(d["A"], d["B"]),
    "scipy.special.i0e": lambda d: sp.i0e(d["A"]),
    "scipy.special.stdtr": lambda d: sp.stdtr(d["A"], d["B"]),
    "scipy.stats.zscore": lambda d: st.zscore(d["A"], axis=0),
    "scipy.stats.skew": lambda d: st.skew(d["A"], axis=0),
    "scipy.stats.kurtosis": lambda d: st.kurtosis(d["A"], axis=0),
    "scipy.stats.moment": lambda d: st.moment(d["A"], order=3, axis=0),
    "scipy.stats.gmean": lambda d: st.gmean(d["A"], axis=0),
    "scipy.stats.hmean": lambda d: st.hmean(d["A"], axis=0),
    "scipy.stats.pmean": lambda d: st.pmean(d["A"], 2.0, axis=0),
    "scipy.stats.variation": lambda d: st.variation(d["A"], axis=0),
    "scipy.stats.sem": lambda d: st.sem(d["A"], axis=0),
    "scipy.stats.ttest_ind": lambda d: st.ttest_ind(d["A"], d["B"], axis=0).statistic,
    "scipy.stats.pearsonr": lambda d: st.pearsonr(d["A"][:, 0], d["B"][:, 0]).statistic,
    "scipy.stats.describe": lambda d: st.describe(d["A"], axis=0).variance,
    "scipy.stats.rankdata": lambda d: st.rankdata(d["A"], axis=0),
    "scipy.stats.trim_mean": lambda d: st.trim_mean(d["A"], 0.1, axis=0),
    "scipy.stats.quantile": lambda d: st.quantile(d["A"], 0.3, axis=0),
    "scipy.stats.bartlett": lambda d: st.bartlett(d["A"][:, 0], d["B"][:, 0]).statistic,
    "scipy.stats.entropy": lambda d: st.entropy(d["A"], axis=0),
    "scipy.stats.ttest_1samp": lambda d: st.ttest_1samp(d["A"], 1.0, axis=0).pvalue,
    "scipy.stats.norm.pdf": lambda d: st.norm.pdf(d["A"]),
    "scipy.fft.fft": lambda d: sfft.fft(d["V"]),
    "scipy.fft.ifft": lambda d: sfft.ifft(d["V"]),
    "scipy.fft.rfft": lambda d: sfft.rfft(d["V"]),
    "scipy.fft.irfft": lambda d: sfft.irfft(sfft.rfft(d["V"])),
    "scipy.fft.fft2": lambda d: sfft.fft2(d["A"]),
    "scipy.fft.fftn": lambda d: sfft.fftn(d["A"]),
    "scipy.fft.fftshift": lambda d: sfft.fftshift(d["V"]),
    "scipy.fft.dct": lambda d: sfft.dct(d["V"]),
    "scipy.signal.fftconvolve": lambda d: sig.fftconvolve(d["V"], d["K"]),
    "scipy.signal.oaconvolve": lambda d: sig.oaconvolve(d["V"], d["K"]),
    "scipy.signal.hilbert": lambda d: sig.hilbert(d["V"]),
    "scipy.signal.resample": lambda d: sig.resample(d["V"], 16),
    "scipy.signal.convolve": lambda d: sig.convolve(d["V"], d["K"]),
    "scipy.signal.correlate": lambda d: sig.correlate(d["V"], d["K"]),
    "scipy.signal.convolve2d": lambda d: sig.convolve2d(d["A"], d["B"][:2, :2]),
    "scipy.signal.lfilter": lambda d: sig.lfilter(d["K"], d["K"][1:2] * 2, d["V"]),
    "scipy.signal.detrend": lambda d: sig.detrend(d["V"]),
    "scipy.signal.savgol_filter": lambda d: sig.savgol_filter(d["V"], 5, 2),
    "scipy.signal.medfilt": lambda d: sig.medfilt(d["V"], 3),
    "scipy.signal.welch": lambda d: sig.welch(d["V"], nperseg=16)[1],
    "scipy.ndimage.gaussian_filter": lambda d: ndi.gaussian_filter(d["A"], 1.0),
    "scipy.ndimage.median_filter": lambda d: ndi.median_filter(d["A"], 3),
    "scipy.ndimage.uniform_filter": lambda d: ndi.uniform_filter(d["A"], 3),
    "scipy.ndimage.sobel": lambda d: ndi.sobel(d["A"]),
    "scipy.ndimage.zoom": lambda d: ndi.zoom(d["A"], 2),
    "scipy.linalg.block_diag": lambda d: la.block_diag(d["M"], d["M"]),
    "scipy.linalg.solve": lambda d: la.solve(d["M"], d["A"][:5, 0]),
    "scipy.linalg.inv": lambda d: la.inv(d["M"]),
    "scipy.linalg.det": lambda d: la.det(d["M"]),
    "scipy.linalg.eigh": lambda d: la.eigh(d["M"] + d["M"].T)[0],
    "scipy.linalg.svd": lambda d: la.svd(d["M"])[1],
    "scipy.linalg.qr": lambda d: la.qr(d["M"])[1],
    "scipy.linalg.cholesky": lambda d: la.cholesky(d["M"] @ d["M"].T),
    "scipy.linalg.expm": lambda d: la.expm(d["M"] / 10),
    "scipy.linalg.lstsq": lambda d: la.lstsq(d["M"], d["A"][:5, 0])[0],
    "scipy.linalg.pinv": lambda d: la.pinv(d["M"]),
    "scipy.linalg.lu_factor": lambda d: la.lu_factor(d["M"])[0],
    "scipy.linalg.logm": lambda d: la.logm(d["M"]),
    "scipy.integrate.trapezoid": lambda d: integrate.trapezoid(d["A"], axis=0),
    "scipy.integrate.cumulative_trapezoid":
        lambda d: integrate.cumulative_trapezoid(d["A"], axis=0),
    "scipy.integrate.simpson": lambda d: integrate.simpson(d["A"], axis=0),
    "scipy.cluster.vq.whiten": lambda d: vq.whiten(d["A"]),
}


def documented() -> dict[str, str]:
    """``{"scipy.module.function": "device" | "default" | "numpy"}`` from the page's table."""
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("### Which device SciPy's results are on"):]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`scipy"):
            continue
        module = cells[0].strip("`")
        for outcome, cell in zip(OUTCOMES, cells[1:]):
            for name in re.findall(r"`([^`]+)`", cell):
                key = f"{module}.{name}"
                assert key not in rows, f"{key} is in the table twice"
                rows[key] = outcome
    return rows


DOCUMENTED = documented()


def test_the_table_lists_every_function_checked_here() -> None:
    assert len(DOCUMENTED) >= 70
    assert set(DOCUMENTED) == set(CALLS), (sorted(set(DOCUMENTED) ^ set(CALLS)))


@pytest.mark.device
@pytest.mark.parametrize("name", sorted(CALLS))
def test_result_device_is_as_documented(name: str, cl_device: ha.Device) -> None:
    f = CALLS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.asarray(f(DATA))
        got = f({k: ha.asarray(v.copy(), device=cl_device) for k, v in DATA.items()})
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-7, atol=1e-12)
    outcome = DOCUMENTED[name]
    if outcome == "numpy":
        assert not isinstance(got, ha.HostPtrArray), f"{name} now returns a HostPtrArray on " \
                                                     f"{got.device}: update docs/interop.md"
        return
    assert isinstance(got, ha.HostPtrArray), type(got)
    where = cl_device if outcome == "device" else ha.default_device()
    assert got.device == where, (f"{name} returned its result on {got.device}, the page "
                                 f"says {outcome} ({where}): update docs/interop.md")
