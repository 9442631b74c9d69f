"""Set functions: unique_all/counts/inverse/values (order unspecified: compared as sets with
their relations) and isin."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hostarray as ha

from . import strategies as strat
from .helpers import ha_fn


# few distinct values so that repeats are common; NaNs and signed zeros included for floats
def _values(dt: np.dtype):
    if dt.kind == "b":
        return st.booleans()
    if dt.kind in "iu":
        return st.integers(0, 3)
    if dt.kind == "f":
        return st.sampled_from([0.0, -0.0, 1.0, 2.5, np.nan, np.inf])
    return st.sampled_from([0j, 1 + 1j, complex(np.nan, 0), 2j])


@st.composite
def repeating_arrays(draw):
    from hypothesis.extra import numpy as hnp
    dt = draw(strat.dtypes("any"))
    return draw(hnp.arrays(dt, strat.shapes(0, 3, max_side=4), elements=_values(dt)))


def _check_unique(x: np.ndarray, values, indices=None, inverse=None, counts=None) -> None:
    v = np.asarray(values)
    assert values.ndim == 1 and values.dtype == x.dtype
    flat = x.reshape(-1)
    nan = np.isnan(flat) if flat.dtype.kind in "fc" else np.zeros(flat.shape, bool)
    distinct = set(flat[~nan].tolist())
    vn = np.isnan(v) if v.dtype.kind in "fc" else np.zeros(v.shape, bool)
    # NaNs are distinct from each other: one entry per NaN; signed zeros are one value
    assert int(vn.sum()) == int(nan.sum())
    assert len(v[~vn]) == len(distinct) and set(v[~vn].tolist()) == distinct
    if indices is not None:
        i = np.asarray(indices)
        assert indices.dtype == ha.int64 and i.shape == v.shape
        for k, idx in enumerate(i):  # first occurrences
            if not vn[k]:
                assert flat[idx] == v[k] and not (flat[:idx] == v[k]).any()
    if inverse is not None:
        inv = np.asarray(inverse)
        assert inverse.dtype == ha.int64 and inv.shape == x.shape
        rebuilt = v[inv.reshape(-1)]
        same = (rebuilt == flat) | (nan & np.isnan(rebuilt) if v.dtype.kind in "fc" else False)
        assert same.all()
    if counts is not None:
        c = np.asarray(counts)
        assert counts.dtype == ha.int64 and c.shape == v.shape and int(c.sum()) == flat.size
        for k in range(len(v)):
            assert c[k] == (1 if vn[k] else int((flat == v[k]).sum()))


@given(x=repeating_arrays())
def test_unique_values(x) -> None:
    _check_unique(x, ha_fn("unique_values")(ha.asarray(x)))


@given(x=repeating_arrays())
def test_unique_counts(x) -> None:
    r = ha_fn("unique_counts")(ha.asarray(x))
    assert r._fields == ("values", "counts")
    _check_unique(x, r.values, counts=r.counts)


@given(x=repeating_arrays())
def test_unique_inverse(x) -> None:
    r = ha_fn("unique_inverse")(ha.asarray(x))
    assert r._fields == ("values", "inverse_indices")
    _check_unique(x, r.values, inverse=r.inverse_indices)


@given(x=repeating_arrays())
def test_unique_all(x) -> None:
    r = ha_fn("unique_all")(ha.asarray(x))
    assert r._fields == ("values", "indices", "inverse_indices", "counts")
    _check_unique(x, r.values, r.indices, r.inverse_indices, r.counts)


@given(data=st.data())
def test_isin(data) -> None:
    a, b = data.draw(strat.binary_arrays("integer"), label="x1, x2")
    invert = data.draw(st.booleans(), label="invert")
    # numpy is the oracle here: array_api_strict 2.6.1's isin ignores invert=
    r = ha_fn("isin")(ha.asarray(a), ha.asarray(b), invert=invert)
    assert r.dtype == ha.bool and r.shape == a.shape
    np.testing.assert_array_equal(np.asarray(r), np.isin(a, b, invert=invert))


@given(data=st.data())
def test_isin_scalars(data) -> None:
    x = data.draw(strat.arrays("int64", min_value=-3, max_value=3), label="x")
    v = data.draw(st.integers(-3, 3), label="scalar")
    isin = ha_fn("isin")
    r = isin(ha.asarray(x), v)
    np.testing.assert_array_equal(np.asarray(r), x == v)
    r0 = isin(v, ha.asarray(x))  # scalar x1: a 0-D result
    assert r0.shape == () and bool(r0) == bool((x == v).any())


@pytest.mark.device
def test_sets_on_device(cl_device) -> None:
    x = ha.asarray(np.array([1, 2, 2, 3]), device=cl_device)
    assert ha_fn("unique_values")(x).device == cl_device
    assert all(r.device == cl_device for r in ha_fn("unique_all")(x))
    assert ha_fn("isin")(x, x).device == cl_device
