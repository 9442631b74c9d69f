"""Utility functions: all, any, diff."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hostarray as ha

from . import strategies as strat
from .helpers import differential, ha_fn


@pytest.mark.parametrize("name", ["all", "any"])
@given(data=st.data())
def test_all_any(name, data) -> None:
    x = data.draw(strat.arrays(strat.dtypes("any")), label="x")
    axis = data.draw(strat.axes_for(x.ndim), label="axis")
    r = differential(name, x, axis=axis, keepdims=data.draw(st.booleans()))
    assert r.dtype == ha.bool


def test_all_any_nan_is_true() -> None:
    x = ha.asarray(np.array([np.nan]))
    assert bool(ha_fn("all")(x)) and bool(ha_fn("any")(x))


@given(data=st.data())
def test_diff(data) -> None:
    dt = data.draw(strat.dtypes("numeric"), label="dtype")
    x = data.draw(strat.arrays(dt, min_dims=1, finite=True, min_value=-50, max_value=50),
                  label="x")
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    n = data.draw(st.integers(0, 3), label="n")
    kw = {"axis": axis, "n": n}
    for where in ("prepend", "append"):
        if data.draw(st.booleans(), label=where):
            shape = list(x.shape)
            shape[axis] = data.draw(st.integers(1, 2))
            kw[where] = data.draw(strat.arrays(dt, tuple(shape), finite=True, min_value=-50,
                                               max_value=50))
    differential("diff", x, **kw)


@pytest.mark.device
def test_utility_on_device(cl_device) -> None:
    x = ha.asarray(np.array([1.0, 4.0, 9.0]), device=cl_device)
    assert ha_fn("all")(x).device == cl_device and ha_fn("any")(x).device == cl_device
    d = ha_fn("diff")(x)
    assert d.device == cl_device
    np.testing.assert_array_equal(np.asarray(d), [3.0, 5.0])
