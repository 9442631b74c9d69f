"""The linalg extension (all of it, including eig and eigvals). Decompositions are checked by
their defining relations (signs and phases of vectors are free), the rest against
array_api_strict."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hostarray as ha

from . import strategies as strat
from .helpers import assert_values, differential

try:
    import array_api_strict as xps
    XLINALG = xps.linalg
except AttributeError:  # pragma: no cover
    XLINALG = None


def linalg():
    la = getattr(ha, "linalg", None)
    if la is None:
        pytest.fail("hostarray.linalg is missing")
    return la


def la_diff(name, *args, **kw):
    return differential(name, *args, _module=(linalg(), XLINALG), **kw)


floats = strat.dtypes("floating")


def _tol(dt) -> float:
    return 2e-3 if np.dtype(dt) in (np.float32, np.complex64) else 1e-8


@st.composite
def matrices(draw, square=True, dtype=floats, min_side=1, batch=True, well_conditioned=False,
             hermitian_pd=False):
    dt = draw(dtype)
    n = draw(st.integers(min_side, 4))
    m = n if square else draw(st.integers(min_side, 4))
    b = draw(strat.shapes(0, 1, min_side=1, max_side=2)) if batch else ()
    # subnormals make LAPACK's eigenvectors too ill-conditioned to check by A v = v w
    a = draw(strat.arrays(dt, (*b, n, m), finite=True, min_value=-2, max_value=2,
                          subnormal=False))
    if well_conditioned or hermitian_pd:
        eye = np.eye(n, dtype=dt)
        if hermitian_pd:
            a = a @ np.conj(np.swapaxes(a, -1, -2)) + n * eye
        else:
            a = a + (4 * n) * eye
    return a.astype(dt)


def H(x):
    return np.conj(np.swapaxes(x, -1, -2))


@given(a=matrices(hermitian_pd=True), upper=st.booleans())
def test_cholesky(a, upper) -> None:
    r = np.asarray(linalg().cholesky(ha.asarray(a), upper=upper))
    rebuilt = H(r) @ r if upper else r @ H(r)
    assert_values(rebuilt, a, rtol=_tol(a.dtype))
    tri = np.triu(r) if upper else np.tril(r)
    assert_values(r, tri)


@given(data=st.data())
def test_cross(data) -> None:
    dt = data.draw(strat.dtypes("numeric"), label="dtype")
    batch = data.draw(strat.shapes(0, 2, min_side=1, max_side=3), label="batch")
    axis = data.draw(st.integers(-len(batch) - 1, -1), label="axis")
    shape = list(batch)
    shape.insert(len(batch) + 1 + axis, 3)
    a = data.draw(strat.arrays(dt, tuple(shape), finite=True, min_value=-10, max_value=10))
    b = data.draw(strat.arrays(dt, tuple(shape), finite=True, min_value=-10, max_value=10))
    la_diff("cross", a, b, axis=axis, _rtol=_tol(dt))


@given(a=matrices(well_conditioned=True))
def test_det_slogdet(a) -> None:
    la_diff("det", a, _rtol=_tol(a.dtype))
    r = linalg().slogdet(ha.asarray(a))
    assert r._fields == ("sign", "logabsdet")
    sign, logabs = np.asarray(r.sign), np.asarray(r.logabsdet)
    assert_values(sign * np.exp(logabs), np.linalg.det(a), rtol=_tol(a.dtype))
    assert r.logabsdet.dtype == np.finfo(a.dtype).dtype  # real, of the input's precision


@given(x=strat.arrays(strat.dtypes("any"), min_dims=2, max_dims=3), k=st.integers(-3, 3))
def test_diagonal(x, k) -> None:
    la_diff("diagonal", x, offset=k)


@given(a=matrices(dtype=strat.dtypes("real floating"), hermitian_pd=True))
def test_eigh_eigvalsh(a) -> None:
    r = linalg().eigh(ha.asarray(a))
    assert r._fields == ("eigenvalues", "eigenvectors")
    w, v = np.asarray(r.eigenvalues), np.asarray(r.eigenvectors)
    assert_values(a @ v, v * w[..., None, :], rtol=_tol(a.dtype), atol=_tol(a.dtype))
    assert (np.diff(w, axis=-1) >= -_tol(a.dtype) * np.abs(w).max()).all()  # ascending
    wv = np.asarray(linalg().eigvalsh(ha.asarray(a)))
    assert_values(wv, w, rtol=_tol(a.dtype))


@st.composite
def grid_matrices(draw):
    # entries on a grid of 1/4: LAPACK's ?geev with near-underflow entries returns vectors
    # that fail A v = v w already in numpy; such accuracy is not the standard's question
    dt = draw(floats)
    n = draw(st.integers(1, 4))
    b = draw(strat.shapes(0, 1, min_side=1, max_side=2))
    grid = st.integers(-8, 8).map(lambda k: k / 4)
    el = st.builds(complex, grid, grid) if dt.kind == "c" else grid
    return draw(hnp.arrays(dt, (*b, n, n), elements=el))


@given(a=grid_matrices())
def test_eig_eigvals(a) -> None:
    # 2025.12: eig / eigvals (complex results)
    r = linalg().eig(ha.asarray(a))
    assert r._fields == ("eigenvalues", "eigenvectors")
    w, v = np.asarray(r.eigenvalues), np.asarray(r.eigenvectors)
    assert w.dtype.kind == "c" and v.dtype.kind == "c"
    assert w.dtype.itemsize == 2 * a.real.dtype.itemsize or a.dtype.kind == "c"
    assert_values(a @ v, v * w[..., None, :], rtol=_tol(a.dtype), atol=_tol(a.dtype) * 10)
    wv = np.asarray(linalg().eigvals(ha.asarray(a)))
    assert wv.shape == w.shape and wv.dtype == w.dtype
    # the same multiset of eigenvalues (their order is unspecified)
    for got, want in zip(wv.reshape(-1, wv.shape[-1]), w.reshape(-1, w.shape[-1])):
        dist = np.abs(got[:, None] - want[None, :])
        assert (dist.min(axis=1) <= 1e-2 * max(1.0, float(np.abs(want).max()))).all()


@given(a=matrices(well_conditioned=True))
def test_inv_solve(a) -> None:
    la_diff("inv", a, _rtol=_tol(a.dtype), _atol=_tol(a.dtype))
    b = np.ones(a.shape[:-1] + (2,), dtype=a.dtype)
    la_diff("solve", a, b, _rtol=_tol(a.dtype), _atol=_tol(a.dtype))


@pytest.mark.slow
@given(data=st.data())
def test_matmul_outer_tensordot_vecdot_transpose(data) -> None:
    dt = data.draw(strat.dtypes("numeric"), label="dtype")
    a = data.draw(strat.arrays(dt, (3, 2), finite=True, min_value=-9, max_value=9))
    b = data.draw(strat.arrays(dt, (2, 4), finite=True, min_value=-9, max_value=9))
    la_diff("matmul", a, b, _rtol=_tol(dt))
    la_diff("outer", a[:, 0], b[0], _rtol=_tol(dt))
    la_diff("tensordot", a, b, axes=1, _rtol=_tol(dt))
    la_diff("vecdot", a, a, axis=-2, _rtol=_tol(dt))
    la_diff("matrix_transpose", a)


@given(a=matrices(square=False, min_side=1),
       ord=st.sampled_from(["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]),
       keepdims=st.booleans())
def test_matrix_norm(a, ord, keepdims) -> None:
    r = la_diff("matrix_norm", a, ord=ord, keepdims=keepdims, _rtol=_tol(a.dtype),
                _atol=_tol(a.dtype))
    assert r.dtype.kind == "f"  # a real dtype also for complex input


@given(a=matrices(well_conditioned=True, batch=False), n=st.integers(-2, 4))
def test_matrix_power(a, n) -> None:
    la_diff("matrix_power", a, n, _rtol=1e-2 if a.dtype in (np.float32, np.complex64)
            else 1e-7, _atol=1e-6)


@given(a=matrices(square=False, dtype=strat.dtypes("real floating")))
def test_matrix_rank_pinv(a) -> None:
    la_diff("matrix_rank", a)
    p = np.asarray(linalg().pinv(ha.asarray(a)))
    assert_values(a @ p @ a, a, rtol=_tol(a.dtype) * 10, atol=_tol(a.dtype) * 10)


@given(a=matrices(square=False), mode=st.sampled_from(["reduced", "complete"]))
def test_qr(a, mode) -> None:
    r = linalg().qr(ha.asarray(a), mode=mode)
    assert r._fields == ("Q", "R")
    q, rr = np.asarray(r.Q), np.asarray(r.R)
    assert_values(q @ rr, a, rtol=_tol(a.dtype), atol=_tol(a.dtype))
    assert_values(rr, np.triu(rr))


@given(a=matrices(square=False), full=st.booleans())
def test_svd_svdvals(a, full) -> None:
    r = linalg().svd(ha.asarray(a), full_matrices=full)
    assert r._fields == ("U", "S", "Vh")
    u, s, vh = np.asarray(r.U), np.asarray(r.S), np.asarray(r.Vh)
    k = s.shape[-1]
    assert_values((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, rtol=_tol(a.dtype),
                  atol=_tol(a.dtype))
    la_diff("svdvals", a, _rtol=_tol(a.dtype), _atol=_tol(a.dtype))


@given(x=strat.arrays(strat.dtypes("numeric"), min_dims=2, max_dims=3, finite=True,
                      min_value=-9, max_value=9),
       k=st.integers(-2, 2))
def test_trace(x, k) -> None:
    r = la_diff("trace", x, offset=k, _rtol=_tol(x.dtype))
    if x.dtype.kind == "i":
        assert r.dtype == ha.int64  # default accumulation dtype


@given(data=st.data())
def test_vector_norm(data) -> None:
    dt = data.draw(floats, label="dtype")
    x = data.draw(strat.arrays(dt, min_dims=1, finite=True, min_value=-5, max_value=5))
    axis = data.draw(strat.axes_for(x.ndim), label="axis")
    ord = data.draw(st.sampled_from([1, 2, 3, 0, np.inf, -np.inf, -1]), label="ord")
    la_diff("vector_norm", x, axis=axis, ord=ord, keepdims=data.draw(st.booleans()),
            _rtol=_tol(dt), _atol=_tol(dt))


def test_linalg_matmul_is_the_operator() -> None:
    a = ha.asarray(np.arange(4.0).reshape(2, 2))
    np.testing.assert_array_equal(np.asarray(linalg().matmul(a, a)), np.asarray(a @ a))


@pytest.mark.device
def test_linalg_on_device(cl_device) -> None:
    a = ha.asarray(np.eye(3) * 2.0, device=cl_device)
    la = linalg()
    for r in (la.inv(a), la.det(a), la.cholesky(a), la.matrix_norm(a), la.vector_norm(a),
              la.svdvals(a), la.eigvalsh(a), la.eigvals(a), *la.qr(a), *la.eigh(a),
              la.trace(a), la.diagonal(a), la.pinv(a), la.solve(a, a)):
        assert r.device == cl_device
    assert float(la.det(a)) == pytest.approx(8.0)
