"""Manipulation functions, including the 2025.12 changes: tuple axes in expand_dims, negative
axes in permute_dims, tuples from broadcast_arrays, broadcast_shapes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hostarray as ha

from . import strategies as strat
from .helpers import assert_values, differential, ha_fn

anydt = strat.dtypes("any")


@given(data=st.data())
def test_broadcast_arrays(data) -> None:
    n = data.draw(st.integers(1, 3), label="n")
    s = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=n, max_side=3))
    dts = [data.draw(anydt) for _ in range(n)]
    arrays = [data.draw(strat.arrays(d, sh)) for d, sh in zip(dts, s.input_shapes)]
    r = differential("broadcast_arrays", *arrays)
    assert type(r) is tuple  # 2025.12: a tuple


@given(s=hnp.mutually_broadcastable_shapes(num_shapes=3, max_side=4))
def test_broadcast_shapes(s) -> None:
    f = ha_fn("broadcast_shapes")
    r = f(*s.input_shapes)
    assert type(r) is tuple and r == s.result_shape
    assert f() == ()
    assert f(s.input_shapes[0]) == s.input_shapes[0]


def test_broadcast_shapes_incompatible() -> None:
    with pytest.raises(ValueError):
        ha_fn("broadcast_shapes")((2, 3), (4,))


@given(data=st.data())
def test_broadcast_to(data) -> None:
    s = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=1, max_side=3))
    x = data.draw(strat.arrays(anydt, s.input_shapes[0]))
    differential("broadcast_to", x, s.result_shape)


@given(data=st.data())
def test_concat(data) -> None:
    n = data.draw(st.integers(1, 3), label="n")
    base = data.draw(strat.shapes(1, 3, max_side=3), label="shape")
    axis = data.draw(st.none() | st.integers(-len(base), len(base) - 1), label="axis")
    d0 = data.draw(anydt)
    arrays = []
    for _ in range(n):
        sh = list(base)
        if axis is not None:
            sh[axis] = data.draw(st.integers(0, 3))
        else:
            sh = data.draw(strat.shapes(0, 3, max_side=3))
        d = data.draw(st.sampled_from(strat.promotable(d0.name, strat.ALL)).map(np.dtype))
        arrays.append(data.draw(strat.arrays(d, tuple(sh))))
    container = data.draw(st.sampled_from([list, tuple]), label="container")
    differential("concat", container(arrays), axis=axis)


@given(x=strat.arrays(anydt), data=st.data())
def test_expand_dims_int(x, data) -> None:
    axis = data.draw(st.integers(-x.ndim - 1, x.ndim), label="axis")
    differential("expand_dims", x, axis=axis)


@given(x=strat.arrays(anydt, max_dims=3), data=st.data())
def test_expand_dims_tuple(x, data) -> None:
    # 2025.12: positions in the result, M = N + len(axis); unique after normalising
    k = data.draw(st.integers(1, 3), label="count")
    m = x.ndim + k
    pos = data.draw(st.lists(st.integers(0, m - 1), min_size=k, max_size=k, unique=True))
    axis = tuple(p - m if data.draw(st.booleans()) else p for p in pos)
    r = ha_fn("expand_dims")(ha.asarray(x), axis=axis)
    want = np.expand_dims(x, axis)
    assert r.shape == want.shape and r.dtype == x.dtype
    assert_values(np.asarray(r), want)


def test_expand_dims_invalid() -> None:
    x = ha.asarray(np.zeros((2, 3)))
    with pytest.raises((IndexError, ValueError)):
        ha_fn("expand_dims")(x, axis=3)
    with pytest.raises((IndexError, ValueError)):
        ha_fn("expand_dims")(x, axis=(0, -4))  # both name position 0 of the 4-D result


@given(x=strat.arrays(anydt), data=st.data())
def test_flip(x, data) -> None:
    differential("flip", x, axis=data.draw(strat.axes_for(x.ndim), label="axis"))


@given(x=strat.arrays(anydt, min_dims=1), data=st.data())
def test_moveaxis(x, data) -> None:
    n = data.draw(st.integers(1, x.ndim), label="count")
    src = data.draw(st.permutations(range(x.ndim)))[:n]
    dst = data.draw(st.permutations(range(x.ndim)))[:n]
    if n == 1 and data.draw(st.booleans()):
        differential("moveaxis", x, src[0] - x.ndim, dst[0])
    else:
        differential("moveaxis", x, tuple(src), tuple(dst))


@given(x=strat.arrays(anydt), data=st.data())
def test_permute_dims(x, data) -> None:
    perm = data.draw(st.permutations(range(x.ndim)), label="axes")
    neg = tuple(p - x.ndim if data.draw(st.booleans()) else p for p in perm)
    r = differential("permute_dims", x, tuple(perm))
    r2 = ha_fn("permute_dims")(ha.asarray(x), neg)  # 2025.12: negative axes
    assert r2.shape == r.shape
    assert_values(np.asarray(r2), np.asarray(r))


@given(x=strat.arrays(anydt, max_dims=2), data=st.data())
def test_repeat(x, data) -> None:
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1) if x.ndim
                     else st.none(), label="axis")
    n = x.size if axis is None else x.shape[axis]
    if data.draw(st.booleans(), label="array repeats"):
        reps = data.draw(strat.arrays("int64", shape=(data.draw(st.sampled_from([1, n])),),
                                      min_value=0, max_value=3))
    else:
        reps = data.draw(st.integers(0, 3))
    differential("repeat", x, reps, axis=axis)


@given(x=strat.arrays(anydt), data=st.data())
def test_reshape(x, data) -> None:
    shape = data.draw(st.permutations(x.shape), label="new shape").copy() if x.ndim else []
    if shape and data.draw(st.booleans(), label="use -1") and x.size:
        shape[data.draw(st.integers(0, len(shape) - 1))] = -1
    differential("reshape", x, tuple(shape))


def test_reshape_copy() -> None:
    x = ha.asarray(np.arange(6.0).reshape(2, 3))
    v = ha_fn("reshape")(x, (3, 2), copy=False)
    v[0, 0] = 42.0
    assert float(x[0, 0]) == 42.0  # copy=False: a view
    c = ha_fn("reshape")(x, (6,), copy=True)
    c[1] = -5.0
    assert float(x[0, 1]) == 1.0
    with pytest.raises(ValueError):
        ha_fn("reshape")(x.mT, (6,), copy=False)  # a transpose can't be flattened in place


@given(x=strat.arrays(anydt), data=st.data())
def test_roll(x, data) -> None:
    axis = data.draw(strat.axes_for(x.ndim), label="axis")
    if isinstance(axis, tuple) and data.draw(st.booleans()):
        shift = tuple(data.draw(st.integers(-5, 5)) for _ in axis)
    else:
        shift = data.draw(st.integers(-5, 5))
    differential("roll", x, shift, axis=axis)


@given(data=st.data())
def test_squeeze(data) -> None:
    shape = data.draw(strat.shapes(1, 4, min_side=1, max_side=3), label="shape")
    ones = [i for i, s in enumerate(shape) if s == 1]
    if not ones:
        shape = (*shape, 1)
        ones = [len(shape) - 1]
    x = data.draw(strat.arrays(anydt, tuple(shape)))
    axis = data.draw(st.lists(st.sampled_from(ones), min_size=1, unique=True), label="axis")
    differential("squeeze", x, tuple(axis) if len(axis) > 1 else axis[0])


def test_squeeze_non_singleton_raises() -> None:
    with pytest.raises(ValueError):
        ha_fn("squeeze")(ha.asarray(np.zeros((2, 1))), axis=0)


@given(data=st.data())
def test_stack(data) -> None:
    shape = data.draw(strat.shapes(0, 3, max_side=3), label="shape")
    n = data.draw(st.integers(1, 3), label="n")
    d0 = data.draw(anydt)
    arrays = [data.draw(strat.arrays(d0, shape)) for _ in range(n)]
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)), label="axis")
    differential("stack", arrays, axis=axis)


@given(x=strat.arrays(anydt, max_dims=3), reps=st.lists(st.integers(0, 3), max_size=4))
def test_tile(x, reps) -> None:
    differential("tile", x, tuple(reps))


@given(x=strat.arrays(anydt, min_dims=1), data=st.data())
def test_unstack(x, data) -> None:
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    r = differential("unstack", x, axis=axis)
    assert type(r) is tuple


@pytest.mark.device
def test_manipulation_on_device(cl_device) -> None:
    x = ha.asarray(np.arange(12.0).reshape(3, 4), device=cl_device)
    for r in (ha_fn("flip")(x), ha_fn("reshape")(x, (4, 3)), ha_fn("concat")([x, x]),
              ha_fn("stack")([x, x]), ha_fn("roll")(x, 1), ha_fn("expand_dims")(x, axis=0),
              ha_fn("permute_dims")(x, (1, 0)), ha_fn("tile")(x, (2,)),
              ha_fn("broadcast_to")(x, (2, 3, 4)), *ha_fn("unstack")(x),
              *ha_fn("broadcast_arrays")(x, x[0])):
        assert r.device == cl_device
    np.testing.assert_array_equal(np.asarray(ha_fn("flip")(x)),
                                  np.arange(12.0).reshape(3, 4)[::-1, ::-1])
