"""array-api-compat helpers and array-api-extra functions on HostPtrArray, compared
with the same calls on numpy arrays; and a plain numpy pipeline."""

from __future__ import annotations

import array_api_compat as compat
import numpy as np
import pytest

import hostarray as ha

xpx = pytest.importorskip("array_api_extra")

rng = np.random.default_rng(2)
A = rng.normal(size=(4, 5))
B = rng.normal(size=(3, 2))
V = np.array([3.0, np.nan, 1.0, 3.0, -2.0, 7.0])
I = np.array([4, 1, 1, 9, 2, 4])  # noqa: E741


# -- array-api-compat ------------------------------------------------------------------------------

def test_compat_helpers_on_the_host() -> None:
    x = ha.asarray(A)
    assert compat.array_namespace(x) is ha
    assert compat.array_namespace(x, ha.asarray(B)) is ha
    assert compat.is_array_api_obj(x)
    assert not compat.is_numpy_array(x)
    assert compat.device(x) == x.device == ha.device("cpu")
    assert compat.size(x) == A.size
    assert compat.is_writeable_array(x)
    assert not compat.is_lazy_array(x)
    assert compat.to_device(x, "cpu") is x or compat.to_device(x, "cpu")._s is x._s


@pytest.mark.device
def test_compat_helpers_with_a_device(cl_device) -> None:
    x = ha.empty(A.shape)  # page-aligned: a device can use it without a copy
    x[...] = A
    y = compat.to_device(x, cl_device)
    assert compat.device(y) == cl_device
    assert y._s is x._s  # same memory, attached lazily
    z = compat.to_device(y, "cpu")
    assert compat.device(z) == ha.device("cpu")
    np.testing.assert_array_equal(np.asarray(z), A)


# -- array-api-extra ------------------------------------------------------------------

EXTRA = {
    "atleast_nd": lambda a, b, v, i, xp: xpx.atleast_nd(v, ndim=3, xp=xp),
    "cov": lambda a, b, v, i, xp: xpx.cov(a, xp=xp),
    "create_diagonal": lambda a, b, v, i, xp: xpx.create_diagonal(a[0], xp=xp),
    "kron": lambda a, b, v, i, xp: xpx.kron(a, b, xp=xp),
    "nunique": lambda a, b, v, i, xp: xpx.nunique(i, xp=xp),
    "pad": lambda a, b, v, i, xp: xpx.pad(a, 2, xp=xp),
    "setdiff1d": lambda a, b, v, i, xp: xpx.setdiff1d(i, i[:2], xp=xp),
    "union1d": lambda a, b, v, i, xp: xpx.union1d(i, i[:3] * 3, xp=xp),
    "isin": lambda a, b, v, i, xp: xpx.isin(i, i[:2], xp=xp),
    "sinc": lambda a, b, v, i, xp: xpx.sinc(a, xp=xp),
    "isclose": lambda a, b, v, i, xp: xpx.isclose(a, a + 1e-9, xp=xp),
    "nan_to_num": lambda a, b, v, i, xp: xpx.nan_to_num(v, xp=xp),
    "nansum": lambda a, b, v, i, xp: xpx.nansum(v, xp=xp),
    "nanmean": lambda a, b, v, i, xp: xpx.nanmean(v, xp=xp),
    "nanmax": lambda a, b, v, i, xp: xpx.nanmax(v, xp=xp),
    "one_hot": lambda a, b, v, i, xp: xpx.one_hot(i, 10, xp=xp),
    "apply_where": lambda a, b, v, i, xp: xpx.apply_where(a > 0, a, lambda t: t * 2,
                                                          fill_value=-1.0, xp=xp),
    "partition": lambda a, b, v, i, xp: xpx.partition(i, 2, xp=xp)[:2],
    "argpartition": lambda a, b, v, i, xp: xp.take(i, xpx.argpartition(i, 2, xp=xp)[:2]),
    "angle": lambda a, b, v, i, xp: xpx.angle(a, xp=xp),
    "deg2rad": lambda a, b, v, i, xp: xpx.deg2rad(a, xp=xp),
    "tril_indices": lambda a, b, v, i, xp: xp.stack(xpx.tril_indices(4, xp=xp)),
    "unravel_index": lambda a, b, v, i, xp: xp.stack(xpx.unravel_index(i, (3, 4), xp=xp)),
    "searchsorted": lambda a, b, v, i, xp: xpx.searchsorted(xp.sort(i), i, xp=xp),
}


@pytest.mark.parametrize("name", sorted(EXTRA))
def test_array_api_extra_matches_numpy(name) -> None:
    f = EXTRA[name]
    want = np.asarray(f(A, B, V, I, np))
    got = f(ha.asarray(A), ha.asarray(B), ha.asarray(V), ha.asarray(I), ha)
    assert isinstance(got, ha.HostPtrArray), type(got)
    if name == "partition":  # only the partition property is specified, not the order
        want, got = np.sort(want), ha.sort(got)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    # the namespace is found from the arrays when xp is not passed
    f2 = f(ha.asarray(A), ha.asarray(B), ha.asarray(V), ha.asarray(I), None) \
        if name not in ("tril_indices", "unravel_index", "argpartition", "searchsorted") \
        else got
    assert isinstance(f2, ha.HostPtrArray)


def test_array_api_extra_at_updates() -> None:
    x = ha.asarray(A.copy())
    y = xpx.at(x)[1, :].set(0.0, copy=True)
    assert isinstance(y, ha.HostPtrArray) and y._s is not x._s
    np.testing.assert_array_equal(np.asarray(x), A)  # copy=True leaves x alone
    want = A.copy()
    want[1, :] = 0.0
    np.testing.assert_array_equal(np.asarray(y), want)
    z = xpx.at(x, (0, slice(None, 2))).add(10.0, copy=False)  # in place: a host write
    want2 = A.copy()
    want2[0, :2] += 10.0
    np.testing.assert_array_equal(np.asarray(z), want2)
    np.testing.assert_array_equal(np.asarray(x), want2)


def test_array_api_extra_lazy_apply() -> None:
    x = ha.asarray(A)
    r = xpx.lazy_apply(lambda a: np.cumsum(np.asarray(a), axis=0), x, as_numpy=True)
    assert isinstance(r, ha.HostPtrArray)
    np.testing.assert_allclose(np.asarray(r), np.cumsum(A, axis=0))
    r2 = xpx.lazy_apply(lambda a: a * 2, x)
    assert isinstance(r2, ha.HostPtrArray)
    np.testing.assert_allclose(np.asarray(r2), A * 2)


SRC = r"""
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void scale(__global double *x, const double a) { x[get_global_id(0)] *= a; }
"""


@pytest.mark.device
@pytest.mark.parametrize("name", ["cov", "kron", "pad", "nanmean", "apply_where"])
def test_array_api_extra_on_device_arrays_written_by_a_kernel(name, cl_device) -> None:
    f = EXTRA[name]
    want = np.asarray(f(A * 2, B * 2, V * 2, I, np))
    prg = ha.Program(SRC, device=cl_device)
    args = []
    for a in (A, B, V):
        x = ha.asarray(a, device=cl_device, copy=True)
        prg.scale(x.size, x.reshape(-1), 2.0)
        args.append(x)
    assert all(a._s.host_stale for a in args)
    ha.reset_stats()
    got = f(*args, ha.asarray(I, device=cl_device), ha)
    assert ha.stats().acquires >= 1
    assert isinstance(got, ha.HostPtrArray) and got.device == cl_device
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


# -- a plain numpy pipeline ------------------------------------------------------------------------

def _pipeline(a):
    centred = a - np.mean(a, axis=0)
    c = np.cov(centred, rowvar=False)
    w, vecs = np.linalg.eigh(c)
    proj = centred @ vecs[:, ::-1][:, :2]
    z = np.clip(np.abs(proj), 0.1, None)
    return np.concatenate([np.log(z), np.sort(proj, axis=0)], axis=1), float(np.linalg.norm(z))


@pytest.mark.device
def test_plain_numpy_pipeline_on_a_device_array(cl_device) -> None:
    want, want_norm = _pipeline(A * 2)
    x = ha.asarray(A, device=cl_device, copy=True)
    ha.Program(SRC, device=cl_device).scale(x.size, x.reshape(-1), 2.0)
    got, got_norm = _pipeline(x)
    assert isinstance(got, ha.HostPtrArray) and got.device == cl_device
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-12)
    assert got_norm == pytest.approx(want_norm, rel=1e-12)
