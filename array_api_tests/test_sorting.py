"""sort and argsort (stable by default; descending keeps the order of equal elements)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hostarray as ha

from . import strategies as strat
from .helpers import differential, ha_fn


@pytest.mark.parametrize("name", ["sort", "argsort"])
@given(data=st.data())
def test_sort_argsort(name, data) -> None:
    dt = data.draw(strat.dtypes("real"), label="dtype")
    # NaN placement is implementation-defined: finite values, with many ties
    x = data.draw(strat.arrays(dt, min_dims=1, finite=True, min_value=-3, max_value=3),
                  label="x")
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    descending = data.draw(st.booleans(), label="descending")
    r = differential(name, x, axis=axis, descending=descending, stable=True)
    if name == "argsort":
        assert r.dtype == ha.int64


@given(x=strat.arrays(strat.dtypes("real"), min_dims=1, finite=True, min_value=-2,
                      max_value=2))
def test_argsort_descending_is_stable(x) -> None:
    # equal elements keep their relative order also when sorting descending
    r = np.asarray(ha_fn("argsort")(ha.asarray(x), axis=-1, descending=True, stable=True))
    flat = np.moveaxis(x, -1, 0)
    ir = np.moveaxis(r, -1, 0)
    vals = np.take_along_axis(flat, ir, axis=0)
    assert (np.diff(vals.astype(np.float64), axis=0) <= 0).all()
    ties = vals[1:] == vals[:-1]
    assert (ir[1:][ties] > ir[:-1][ties]).all()


def test_sort_default_axis_last() -> None:
    x = ha.asarray(np.array([[3, 1, 2], [0, 5, 4]]))
    np.testing.assert_array_equal(np.asarray(ha_fn("sort")(x)), [[1, 2, 3], [0, 4, 5]])


@pytest.mark.device
def test_sort_on_device(cl_device) -> None:
    x = ha.asarray(np.array([3.0, 1.0, 2.0]), device=cl_device)
    r = ha_fn("sort")(x)
    assert r.device == cl_device and ha_fn("argsort")(x).device == cl_device
    np.testing.assert_array_equal(np.asarray(r), [1.0, 2.0, 3.0])
