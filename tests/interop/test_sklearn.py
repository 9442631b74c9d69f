"""scikit-learn with ``array_api_dispatch=True`` on HostPtrArray inputs, compared
with the same estimator or function run on numpy inputs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import hostarray as ha

sklearn = pytest.importorskip("sklearn")

from sklearn import metrics  # noqa: E402
from sklearn import preprocessing as pre  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis  # noqa: E402
from sklearn.kernel_approximation import Nystroem  # noqa: E402
from sklearn.linear_model import LogisticRegression, Ridge, RidgeCV  # noqa: E402
from sklearn.metrics import pairwise  # noqa: E402
from sklearn.mixture import GaussianMixture  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.naive_bayes import GaussianNB  # noqa: E402

pytestmark = pytest.mark.usefixtures("scipy_array_api")

rng = np.random.default_rng(0)
X = rng.normal(size=(60, 5))
Y = rng.normal(size=(7, 5))
LABELS = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
TARGET = X @ np.arange(1.0, 6.0) + 0.1 * rng.normal(size=60)

# name -> f(X, Y, labels, target); every array result is compared with numpy's
ESTIMATORS = {
    "PCA-full": lambda X, Y, c, t: PCA(3, svd_solver="full").fit_transform(X),
    "PCA-covariance_eigh": lambda X, Y, c, t: PCA(3, svd_solver="covariance_eigh")
    .fit_transform(X),
    "PCA-randomized": lambda X, Y, c, t: PCA(3, svd_solver="randomized", random_state=0,
                                             power_iteration_normalizer="QR").fit(X)
    .inverse_transform(PCA(3, svd_solver="randomized", random_state=0,
                           power_iteration_normalizer="QR").fit_transform(X)),
    "LinearDiscriminantAnalysis": lambda X, Y, c, t: LinearDiscriminantAnalysis().fit(X, c)
    .predict_proba(X),
    "LinearDiscriminantAnalysis-transform": lambda X, Y, c, t: LinearDiscriminantAnalysis()
    .fit(X, c).transform(X),
    "Ridge": lambda X, Y, c, t: Ridge(solver="svd").fit(X, t).predict(Y),
    "RidgeCV": lambda X, Y, c, t: RidgeCV(alphas=(0.1, 1.0, 10.0)).fit(X, t).predict(Y),
    "LogisticRegression": lambda X, Y, c, t: LogisticRegression().fit(X, c).predict_proba(Y),
    "GaussianNB": lambda X, Y, c, t: GaussianNB().fit(X, c).predict_proba(Y),
    "GaussianMixture": lambda X, Y, c, t: GaussianMixture(2, init_params="random",
                                                          random_state=0).fit(X)
    .predict_proba(Y),
    "Nystroem": lambda X, Y, c, t: Nystroem(n_components=5, random_state=0).fit(X)
    .transform(Y),
    "StandardScaler": lambda X, Y, c, t: pre.StandardScaler().fit(X).transform(Y),
    "MinMaxScaler": lambda X, Y, c, t: pre.MinMaxScaler().fit(X).transform(Y),
    "MaxAbsScaler": lambda X, Y, c, t: pre.MaxAbsScaler().fit(X).transform(Y),
    "RobustScaler": lambda X, Y, c, t: pre.RobustScaler().fit(X).transform(Y),
    "QuantileTransformer": lambda X, Y, c, t: pre.QuantileTransformer(n_quantiles=20)
    .fit(X).transform(Y),
    "PowerTransformer": lambda X, Y, c, t: pre.PowerTransformer().fit(X).transform(Y),
    "Normalizer": lambda X, Y, c, t: pre.Normalizer().fit_transform(X),
    "Binarizer": lambda X, Y, c, t: pre.Binarizer(threshold=0.2).fit_transform(X),
    "PolynomialFeatures": lambda X, Y, c, t: pre.PolynomialFeatures(2).fit_transform(Y),
    "KernelCenterer": lambda X, Y, c, t: pre.KernelCenterer()
    .fit_transform(pairwise.linear_kernel(X)),
    "LabelEncoder": lambda X, Y, c, t: pre.LabelEncoder().fit_transform(c[::-1]),
    "LabelBinarizer": lambda X, Y, c, t: pre.LabelBinarizer().fit_transform(c),
    "normalize": lambda X, Y, c, t: pre.normalize(X, norm="l1"),
    "train_test_split": lambda X, Y, c, t: train_test_split(X, random_state=0)[1],
}
PAIRWISE = {
    "euclidean_distances": lambda X, Y: pairwise.euclidean_distances(X, Y),
    "cosine_similarity": lambda X, Y: pairwise.cosine_similarity(X, Y),
    "cosine_distances": lambda X, Y: pairwise.cosine_distances(X, Y),
    "manhattan_distances": lambda X, Y: pairwise.manhattan_distances(X, Y),
    "rbf_kernel": lambda X, Y: pairwise.rbf_kernel(X, Y, gamma=0.3),
    "linear_kernel": lambda X, Y: pairwise.linear_kernel(X, Y),
    "polynomial_kernel": lambda X, Y: pairwise.polynomial_kernel(X, Y, degree=2),
    "sigmoid_kernel": lambda X, Y: pairwise.sigmoid_kernel(X, Y),
    "additive_chi2_kernel": lambda X, Y: pairwise.additive_chi2_kernel(abs(X), abs(Y)),
    "chi2_kernel": lambda X, Y: pairwise.chi2_kernel(abs(X), abs(Y)),
    "pairwise_distances": lambda X, Y: pairwise.pairwise_distances(X, Y, metric="euclidean"),
    "pairwise_kernels": lambda X, Y: pairwise.pairwise_kernels(X, Y, metric="rbf"),
    "paired_euclidean_distances": lambda X, Y: pairwise.paired_euclidean_distances(X[:7], Y),
}
SCORES = {
    "accuracy_score": lambda c, t, X: metrics.accuracy_score(c, c[::-1]),
    "zero_one_loss": lambda c, t, X: metrics.zero_one_loss(c, c[::-1]),
    "f1_score": lambda c, t, X: metrics.f1_score(c, c[::-1]),
    "r2_score": lambda c, t, X: metrics.r2_score(t, X[:, 0] * 3),
    "mean_squared_error": lambda c, t, X: metrics.mean_squared_error(t, X[:, 0] * 3),
    "mean_absolute_error": lambda c, t, X: metrics.mean_absolute_error(t, X[:, 0] * 3),
    "log_loss": lambda c, t, X: metrics.log_loss(c, 1 / (1 + abs(X[:, 0]))),
    "confusion_matrix": lambda c, t, X: metrics.confusion_matrix(c, c[::-1]),
}


@pytest.fixture(autouse=True)
def dispatch():
    with sklearn.config_context(array_api_dispatch=True), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # sklearn's notes on solver choices
        yield


def _compare(got, want, device=None) -> None:
    if isinstance(want, np.ndarray):
        assert isinstance(got, ha.HostPtrArray), f"got {type(got).__name__}"
        if device is not None:
            assert got.device == device
        assert got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-7, atol=1e-9)
    else:
        assert not isinstance(got, np.ndarray)
        np.testing.assert_allclose(float(got), float(want), rtol=1e-7)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_estimators_match_numpy(name) -> None:
    f = ESTIMATORS[name]
    with sklearn.config_context(array_api_dispatch=False):
        want = f(X, Y, LABELS, TARGET)
    got = f(*(ha.asarray(a.copy()) for a in (X, Y, LABELS, TARGET)))
    _compare(got, want)


@pytest.mark.parametrize("name", sorted(PAIRWISE))
def test_pairwise_metrics_match_numpy(name) -> None:
    f = PAIRWISE[name]
    with sklearn.config_context(array_api_dispatch=False):
        want = f(X, Y)
    _compare(f(ha.asarray(X), ha.asarray(Y)), want)


@pytest.mark.parametrize("name", sorted(SCORES))
def test_scores_match_numpy(name) -> None:
    f = SCORES[name]
    with sklearn.config_context(array_api_dispatch=False):
        want = f(LABELS, TARGET, X)
    _compare(f(ha.asarray(LABELS), ha.asarray(TARGET), ha.asarray(X)), want)


def test_fitted_attributes_are_hostptrarrays() -> None:
    m = PCA(2).fit(ha.asarray(X))
    assert isinstance(m.components_, ha.HostPtrArray)
    assert isinstance(m.explained_variance_, ha.HostPtrArray)
    s = pre.StandardScaler().fit(ha.asarray(X))
    assert isinstance(s.mean_, ha.HostPtrArray) and isinstance(s.scale_, ha.HostPtrArray)
    np.testing.assert_allclose(np.asarray(s.mean_), X.mean(axis=0))


def test_without_dispatch_sklearn_converts_through_numpy() -> None:
    with sklearn.config_context(array_api_dispatch=False):
        want = pre.StandardScaler().fit_transform(X)
        got = pre.StandardScaler().fit_transform(ha.asarray(X))
        proba = LogisticRegression().fit(ha.asarray(X), ha.asarray(LABELS)).predict_proba(X)
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, want)
    assert proba.shape == (60, 2)


# -- inputs whose newest data is on the OpenCL device ----------------------------------------------

SRC = r"""
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void scale(__global double *x, const double a) { x[get_global_id(0)] *= a; }
"""


def _written_by_a_kernel(a: np.ndarray, dev: ha.Device, factor: float) -> ha.HostPtrArray:
    """``a * factor`` on ``dev``, the multiplication done by a kernel (not yet acquired)."""
    x = ha.asarray(a, device=dev, copy=True)
    ha.Program(SRC, device=dev).scale(x.size, x.reshape(-1), factor)
    assert x._s.host_stale  # the newest data is on the device until something reads it
    return x


@pytest.mark.device
@pytest.mark.parametrize("name", ["PCA-full", "Ridge", "StandardScaler",
                                  "LinearDiscriminantAnalysis"])
def test_estimators_on_device_arrays_see_kernel_writes(name, cl_device) -> None:
    f = ESTIMATORS[name]
    with sklearn.config_context(array_api_dispatch=False):
        want = f(X * 2, Y * 2, LABELS, TARGET)
    Xd = _written_by_a_kernel(X, cl_device, 2.0)
    Yd = _written_by_a_kernel(Y, cl_device, 2.0)
    got = f(Xd, Yd, ha.asarray(LABELS, device=cl_device), ha.asarray(TARGET, device=cl_device))
    _compare(got, want, device=cl_device)


@pytest.mark.device
def test_pairwise_on_device_arrays(cl_device) -> None:
    want = pairwise.euclidean_distances(X * 3, Y)
    got = pairwise.euclidean_distances(_written_by_a_kernel(X, cl_device, 3.0),
                                       ha.asarray(Y, device=cl_device))
    _compare(got, want, device=cl_device)
