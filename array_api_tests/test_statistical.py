"""Statistical functions: reductions with axis tuples/negative axes/keepdims, the default
accumulation dtypes of sum/prod/cumulative_*, NaN propagation, correction in std/var."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hostarray as ha

from . import strategies as strat
from .helpers import differential, ha_fn


def _rtol(dt: np.dtype) -> float:
    return 1e-4 if dt in (np.float32, np.complex64) else 1e-10


def _moderate(dt, **kw):
    # summation order is free: bounded values keep rounding differences small
    return strat.arrays(dt, finite=True, min_value=-1000, max_value=1000, **kw)


@pytest.mark.parametrize("name", ["max", "min"])
@given(data=st.data())
def test_max_min(name, data) -> None:
    x = data.draw(strat.arrays(strat.dtypes("real"), min_dims=1, min_side=1), label="x")
    axis = data.draw(strat.axes_for(x.ndim), label="axis")
    differential(name, x, axis=axis, keepdims=data.draw(st.booleans()))


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_propagate_nan(name) -> None:
    x = ha.asarray(np.array([1.0, np.nan, 3.0]))
    assert np.isnan(float(ha_fn(name)(x)))


@given(data=st.data())
def test_mean(data) -> None:
    dt = data.draw(strat.dtypes("floating"), label="dtype")
    x = data.draw(_moderate(dt, min_dims=1, min_side=1), label="x")
    axis = data.draw(strat.axes_for(x.ndim), label="axis")
    differential("mean", x, axis=axis, keepdims=data.draw(st.booleans()), _rtol=_rtol(dt))


@pytest.mark.parametrize("name", ["sum", "prod"])
@given(data=st.data())
def test_sum_prod(name, data) -> None:
    dt = data.draw(strat.dtypes("numeric"), label="dtype")
    x = data.draw(strat.arrays(dt, finite=True, min_value=-3, max_value=3, max_side=3),
                  label="x")
    axis = data.draw(strat.axes_for(x.ndim), label="axis")
    out = data.draw(st.none() | st.sampled_from(strat.promotable(dt.name, strat.NUMERIC))
                    .map(np.dtype).filter(lambda d: strat.promote(dt, d) == d), label="dtype=")
    kw = {"axis": axis, "keepdims": data.draw(st.booleans())}
    if out is not None:
        kw["dtype"] = out
    r = differential(name, x, _rtol=_rtol(dt), **kw)
    if out is None:  # default accumulation dtypes (statistical functions page)
        want = {"i": ha.int64, "u": ha.uint64}.get(dt.kind, dt)
        assert r.dtype == want


@pytest.mark.parametrize("name", ["std", "var"])
@given(data=st.data())
def test_std_var(name, data) -> None:
    dt = data.draw(strat.dtypes("real floating"), label="dtype")
    x = data.draw(_moderate(dt, min_dims=1, min_side=1), label="x")
    axis = data.draw(strat.axes_for(x.ndim), label="axis")
    correction = data.draw(st.sampled_from([0, 0.0, 1, 1.0, 0.5]), label="correction")
    differential(name, x, axis=axis, correction=correction,
                 keepdims=data.draw(st.booleans()), _rtol=1e-3 if dt == np.float32 else 1e-8)


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@given(data=st.data())
def test_cumulative(name, data) -> None:
    dt = data.draw(strat.dtypes("numeric"), label="dtype")
    x = data.draw(strat.arrays(dt, min_dims=1, max_dims=3, finite=True, min_value=-3,
                               max_value=3, max_side=3), label="x")
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1) if x.ndim > 1
                     else st.sampled_from([None, 0, -1]), label="axis")
    include_initial = data.draw(st.booleans(), label="include_initial")
    r = differential(name, x, axis=axis, include_initial=include_initial, _rtol=_rtol(dt))
    n = x.shape[axis if axis is not None else 0]
    assert r.shape[axis if axis is not None else 0] == n + include_initial
    if dt.kind in "iu":
        assert r.dtype == {"i": ha.int64, "u": ha.uint64}[dt.kind]


def test_reductions_of_empty() -> None:
    z = ha.asarray(np.zeros((0,), dtype=np.float64))
    assert float(ha_fn("sum")(z)) == 0.0
    assert float(ha_fn("prod")(z)) == 1.0
    assert np.isnan(float(ha_fn("mean")(z)))


@pytest.mark.device
def test_statistical_on_device(cl_device) -> None:
    x = ha.asarray(np.arange(6.0).reshape(2, 3), device=cl_device)
    for name in ("max", "min", "mean", "sum", "prod", "std", "var"):
        r = ha_fn(name)(x, axis=0)
        assert r.device == cl_device, name
    assert ha_fn("cumulative_sum")(x, axis=1).device == cl_device
    assert float(ha_fn("sum")(x)) == 15.0
