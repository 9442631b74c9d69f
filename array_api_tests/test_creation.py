"""Creation functions: values against array_api_strict, default dtypes, ``device=`` placement,
``copy=`` semantics of asarray."""

from __future__ import annotations

import array_api_strict as xps
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hostarray as ha

from . import strategies as strat
from .helpers import HOST, assert_like, assert_values, differential, ha_fn

small = st.integers(-6, 6)
sizes = st.integers(0, 5)


@given(start=small, stop=st.none() | small, step=st.sampled_from([1, 2, 3, -1, -2]),
       dt=st.none() | st.sampled_from(["int16", "int64", "float32", "float64"]))
def test_arange_integers(start, stop, step, dt) -> None:
    kw = {} if dt is None else {"dtype": np.dtype(dt)}
    if dt is not None and np.dtype(dt).kind == "i" and (start < 0 or (stop or 0) < 0):
        kw = {}
    if stop is None:
        differential("arange", start, **kw)
    else:
        differential("arange", start, stop, step, **kw)


@given(start=st.floats(-5, 5), stop=st.floats(-5, 5),
       step=st.sampled_from([0.5, 0.25, -0.5, 1.5]))
def test_arange_floats(start, stop, step) -> None:
    r = differential("arange", start, stop, step)
    assert r.dtype == ha.float64


@given(shape=strat.shapes(max_dims=3), dt=st.none() | strat.dtypes("any"))
def test_empty_zeros_ones(shape, dt) -> None:
    kw = {} if dt is None else {"dtype": dt}
    for name in ("zeros", "ones"):
        differential(name, shape, **kw)
    e = ha_fn("empty")(shape, **kw)
    assert e.shape == shape and e.dtype == (np.dtype("float64") if dt is None else dt)
    assert ha.zeros(3).dtype == ha.float64 and ha_fn("ones")(2).shape == (2,)


@given(shape=strat.shapes(max_dims=2),
       fill=st.one_of(st.booleans(), st.integers(-100, 100), st.floats(allow_nan=True),
                      st.complex_numbers(max_magnitude=1e6)))
def test_full_default_dtype(shape, fill) -> None:
    # the default dtype follows the fill value's Python kind (bool/int/float/complex)
    r = differential("full", shape, fill)
    want = {bool: "bool", int: "int64", float: "float64", complex: "complex128"}[type(fill)]
    assert r.dtype == np.dtype(want)


@given(shape=strat.shapes(max_dims=2), dt=strat.dtypes("numeric"), v=st.integers(0, 100))
def test_full_with_dtype(shape, dt, v) -> None:
    differential("full", shape, strat.scalar_for(dt, v), dtype=dt)


@pytest.mark.parametrize("name", ["empty_like", "zeros_like", "ones_like", "full_like"])
@given(data=st.data())
def test_like(name: str, data) -> None:
    x = data.draw(strat.arrays(strat.dtypes("any")), label="x")
    dt = data.draw(st.none() | strat.dtypes("any"), label="dtype")
    args = (x, strat.scalar_for(dt if dt is not None else x.dtype, 1)) \
        if name == "full_like" else (x,)
    kw = {} if dt is None else {"dtype": dt}
    if name == "empty_like":
        r = ha_fn(name)(ha.asarray(x), **kw)
        assert r.shape == x.shape and r.dtype == (x.dtype if dt is None else dt)
        assert r.device == HOST
    else:
        differential(name, *args, **kw)


@given(n=sizes, m=st.none() | sizes, k=st.integers(-4, 4),
       dt=st.none() | strat.dtypes("numeric"))
def test_eye(n, m, k, dt) -> None:
    kw = {"k": k} if dt is None else {"k": k, "dtype": dt}
    differential("eye", n, m, **kw)


@given(start=st.floats(-10, 10), stop=st.floats(-10, 10), num=st.integers(0, 7),
       endpoint=st.booleans(), dt=st.sampled_from([None, "float32", "float64"]))
def test_linspace(start, stop, num, endpoint, dt) -> None:
    kw = {"endpoint": endpoint}
    if dt:
        kw["dtype"] = np.dtype(dt)
    differential("linspace", start, stop, num, _rtol=1e-6, **kw)


@given(start=st.complex_numbers(max_magnitude=10), stop=st.complex_numbers(max_magnitude=10),
       num=st.integers(0, 5))
def test_linspace_complex(start, stop, num) -> None:
    r = differential("linspace", start, stop, num, _rtol=1e-6)
    assert r.dtype == ha.complex128


@given(data=st.data())
def test_meshgrid(data) -> None:
    n = data.draw(st.integers(0, 3), label="n")
    dt = data.draw(strat.dtypes("numeric"), label="dtype")
    arrays = [data.draw(strat.arrays(dt, shape=strat.shapes(1, 1, max_side=3)))
              for _ in range(n)]
    indexing = data.draw(st.sampled_from(["xy", "ij"]), label="indexing")
    r = differential("meshgrid", *arrays, indexing=indexing)
    assert isinstance(r, tuple)  # 2025.12: a tuple, not a list


@pytest.mark.parametrize("name", ["tril", "triu"])
@given(data=st.data())
def test_tril_triu(name, data) -> None:
    x = data.draw(strat.arrays(strat.dtypes("any"), min_dims=2, max_dims=3), label="x")
    k = data.draw(st.integers(-4, 4), label="k")
    differential(name, x, k=k)


@given(x=strat.arrays(strat.dtypes("any")))
def test_asarray_from_numpy_and_lists(x) -> None:
    r = ha.asarray(x)
    assert_like(r, xps.asarray(x))
    if x.ndim == 1 and x.size:
        lst = x.tolist()
        assert_like(ha.asarray(lst), xps.asarray(lst))


@pytest.mark.parametrize("obj,want", [(True, "bool"), (3, "int64"), (2.5, "float64"),
                                      (1 + 2j, "complex128"), ([1, 2], "int64"),
                                      ([1.0, 2], "float64"), ([[True]], "bool")])
def test_asarray_default_dtypes(obj, want) -> None:
    assert ha.asarray(obj).dtype == np.dtype(want)


def test_asarray_copy_semantics() -> None:
    a = np.arange(8.0)
    shared = ha.asarray(a, copy=False)
    a[0] = 100.0
    assert float(shared[0]) == 100.0  # copy=False shares
    copied = ha.asarray(a, copy=True)
    a[1] = -1.0
    assert float(copied[1]) == 1.0  # copy=True does not
    x = ha.asarray([1.0, 2.0])
    y = ha.asarray(x, copy=True)
    y[0] = 5.0
    assert float(x[0]) == 1.0
    assert ha.asarray(x) is x or np.shares_memory(np.asarray(ha.asarray(x)), np.asarray(x))
    with pytest.raises(ValueError):
        ha.asarray(x, dtype=ha.float32, copy=False)
    with pytest.raises(ValueError):
        ha.asarray([1, 2, 3], copy=False)  # a list cannot be shared


def test_asarray_from_strict_and_dlpack() -> None:
    s = xps.asarray([1.0, 2.0, 3.0])
    r = ha.asarray(s)
    np.testing.assert_array_equal(np.asarray(r), [1.0, 2.0, 3.0])
    f = ha_fn("from_dlpack")
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    r = f(a)
    assert isinstance(r, ha.HostPtrArray) and r.dtype == ha.int32
    np.testing.assert_array_equal(np.asarray(r), a)
    r2 = f(ha.asarray(a))
    np.testing.assert_array_equal(np.asarray(r2), a)
    r3 = f(a, copy=True)
    a[0, 0] = 99
    assert int(r3[0, 0]) == 0


@pytest.mark.device
@pytest.mark.parametrize("call", [
    lambda d: ha.asarray([1.0, 2.0], device=d), lambda d: ha.zeros((2, 2), device=d),
    lambda d: ha.empty(3, device=d), lambda d: ha.ones(3, device=d),
    lambda d: ha.full((2,), 7, device=d), lambda d: ha.arange(5, device=d),
    lambda d: ha.linspace(0, 1, 5, device=d), lambda d: ha.eye(3, device=d),
    lambda d: ha.zeros_like(ha.asarray([1, 2]), device=d),
    lambda d: ha.ones_like(ha.zeros(2, device=d)),
    lambda d: ha.full_like(ha.zeros(2, device=d), 3.0),
    lambda d: ha.empty_like(ha.zeros(2, device=d)),
    lambda d: ha.tril(ha.ones((3, 3), device=d)),
    lambda d: ha.meshgrid(ha.arange(2, device=d), ha.arange(3, device=d))[1],
])
def test_creation_device(call, cl_device) -> None:
    r = call(cl_device)
    assert r.device == cl_device
    # values are readable back on the host after placement
    assert np.asarray(r).shape == r.shape


@pytest.mark.device
def test_like_keeps_device_and_values(cl_device) -> None:
    x = ha.asarray(np.arange(6.0), device=cl_device)
    r = ha_fn("full_like")(x, 2.0)
    assert r.device == cl_device
    assert_values(np.asarray(r), np.full(6, 2.0))
