"""take and take_along_axis."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hostarray as ha

from . import strategies as strat
from .helpers import differential, ha_fn


@given(data=st.data())
def test_take(data) -> None:
    x = data.draw(strat.arrays(strat.dtypes("any"), min_dims=1, min_side=1), label="x")
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1) if x.ndim > 1
                     else st.sampled_from([None, 0, -1]), label="axis")
    n = x.shape[0 if axis is None else axis]
    idx_dt = data.draw(st.sampled_from(["int8", "int16", "int32", "int64", "uint8"]))
    lo = 0 if idx_dt.startswith("u") else -n  # 2024.12: negative indices count from the end
    idx = data.draw(strat.arrays(idx_dt, shape=strat.shapes(1, 1, max_side=5),
                                 min_value=lo, max_value=n - 1), label="indices")
    kw = {} if axis is None else {"axis": axis}
    differential("take", x, idx, **kw)


@given(data=st.data())
def test_take_along_axis(data) -> None:
    x = data.draw(strat.arrays(strat.dtypes("any"), min_dims=1, min_side=1), label="x")
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    n = x.shape[axis]
    shape = list(x.shape)
    shape[axis] = data.draw(st.integers(0, 4), label="count")
    idx = data.draw(strat.arrays("int64", shape=tuple(shape), min_value=-n, max_value=n - 1),
                    label="indices")
    differential("take_along_axis", x, idx, axis=axis)


def test_take_along_axis_default_axis_is_last() -> None:
    x = ha.asarray(np.array([[3, 1, 2], [9, 7, 8]]))
    idx = ha.asarray(np.array([[1, 2, 0], [0, 0, 1]]))
    r = ha_fn("take_along_axis")(x, idx)
    np.testing.assert_array_equal(np.asarray(r), [[1, 2, 3], [9, 9, 7]])


@pytest.mark.device
def test_take_on_device(cl_device) -> None:
    x = ha.asarray(np.arange(10.0), device=cl_device)
    idx = ha.asarray(np.array([9, 0, -1]), device=cl_device)
    r = ha_fn("take")(x, idx)
    assert r.device == cl_device
    np.testing.assert_array_equal(np.asarray(r), [9.0, 0.0, 9.0])
