"""Searching functions: argmax, argmin, count_nonzero, nonzero, searchsorted, where."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hostarray as ha

from . import strategies as strat
from .helpers import differential, ha_fn


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@given(data=st.data())
def test_argmax_argmin(name, data) -> None:
    x = data.draw(strat.arrays(strat.dtypes("real"), min_dims=1, min_side=1), label="x")
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    r = differential(name, x, axis=axis, keepdims=keepdims)
    assert r.dtype == ha.int64  # the default index dtype


@given(data=st.data())
def test_count_nonzero(data) -> None:
    x = data.draw(strat.arrays(strat.dtypes("any")), label="x")
    axis = data.draw(strat.axes_for(x.ndim), label="axis")
    differential("count_nonzero", x, axis=axis, keepdims=data.draw(st.booleans()))


@given(x=strat.arrays(strat.dtypes("any"), min_dims=1))
def test_nonzero(x) -> None:
    r = differential("nonzero", x)
    assert type(r) is tuple and len(r) == x.ndim


def test_nonzero_zero_d_raises() -> None:
    with pytest.raises((ValueError, TypeError)):
        ha_fn("nonzero")(ha.asarray(1.0))


@given(data=st.data())
def test_searchsorted(data) -> None:
    dt = data.draw(strat.dtypes("real"), label="dtype")
    x1 = np.sort(data.draw(strat.arrays(dt, shape=strat.shapes(1, 1), finite=True)))
    x2 = data.draw(strat.arrays(dt, finite=True), label="x2")
    side = data.draw(st.sampled_from(["left", "right"]), label="side")
    differential("searchsorted", x1, x2, side=side)
    if data.draw(st.booleans(), label="with sorter"):
        perm = np.asarray(data.draw(st.permutations(range(x1.size))), dtype=np.int64)
        shuffled = np.empty_like(x1)
        shuffled[perm] = x1
        differential("searchsorted", shuffled, x2, side=side, sorter=perm)


@given(data=st.data())
def test_searchsorted_scalar_x2(data) -> None:
    # 2025.12: x2 may be a Python scalar; the result is 0-D
    dt = data.draw(strat.dtypes("real"), label="dtype")
    x1 = np.sort(data.draw(strat.arrays(dt, shape=strat.shapes(1, 1), finite=True)))
    v = data.draw(strat.python_scalars(dt), label="x2")
    r = ha_fn("searchsorted")(ha.asarray(x1), v)
    assert r.shape == () and r.dtype == ha.int64
    assert int(r) == int(np.searchsorted(x1, v))


@given(data=st.data())
def test_where(data) -> None:
    s = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_side=3))
    cond = data.draw(strat.arrays("bool", s.input_shapes[0]), label="condition")
    a, _ = data.draw(strat.binary_arrays("any"), label="x1, x2")
    d2 = data.draw(st.sampled_from(strat.promotable(a.dtype.name, strat.ALL)))
    x1 = data.draw(strat.arrays(a.dtype, s.input_shapes[1]))
    x2 = data.draw(strat.arrays(d2, s.input_shapes[2]))
    differential("where", cond, x1, x2)


@given(data=st.data())
def test_where_python_scalars(data) -> None:
    dt = data.draw(strat.dtypes("any"), label="dtype")
    cond = data.draw(strat.arrays("bool"), label="condition")
    x1 = data.draw(strat.arrays(dt, cond.shape), label="x1")
    s = data.draw(strat.python_scalars(dt), label="scalar")
    r = differential("where", cond, x1, s)
    assert r.dtype == dt
    differential("where", cond, s, x1)


@pytest.mark.device
def test_searching_on_device(cl_device) -> None:
    x = ha.asarray(np.array([3.0, 0.0, 5.0]), device=cl_device)
    for r in (ha_fn("argmax")(x), ha_fn("count_nonzero")(x), *ha_fn("nonzero")(x),
              ha_fn("where")(x > 1, x, 0.0), ha_fn("searchsorted")(ha_fn("sort")(x), x)):
        assert r.device == cl_device
    assert int(ha_fn("argmax")(x)) == 2
