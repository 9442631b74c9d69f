"""Linear algebra in the main namespace: matmul, matrix_transpose, tensordot, vecdot."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hostarray as ha

from . import strategies as strat
from .helpers import differential, ha_fn

side = st.integers(1, 4)


def _tol(dt: np.dtype) -> float:
    return 1e-4 if dt in (np.float32, np.complex64) else 1e-10


@pytest.mark.slow
@given(data=st.data())
def test_matmul(data) -> None:
    dt = data.draw(strat.dtypes("numeric"), label="dtype")
    n, k, m = data.draw(side), data.draw(side), data.draw(side)
    batch = data.draw(strat.shapes(0, 2, max_side=3), label="batch")
    form = data.draw(st.sampled_from(["mm", "vm", "mv", "vv"]), label="form")
    s1 = (k,) if form[0] == "v" else (*batch, n, k)
    s2 = (k,) if form[1] == "v" else (*batch, k, m)
    a = data.draw(strat.arrays(dt, s1, finite=True, min_value=-100, max_value=100))
    b = data.draw(strat.arrays(dt, s2, finite=True, min_value=-100, max_value=100))
    differential("matmul", a, b, _rtol=_tol(dt))


@given(x=strat.arrays(strat.dtypes("any"), min_dims=2, max_dims=4))
def test_matrix_transpose(x) -> None:
    differential("matrix_transpose", x)


@given(data=st.data())
def test_tensordot(data) -> None:
    dt = data.draw(strat.dtypes("numeric"), label="dtype")
    a = data.draw(strat.arrays(dt, shapes(2, 3), finite=True, min_value=-50, max_value=50))
    nax = data.draw(st.integers(0, min(2, a.ndim)), label="axes")
    contracted = a.shape[a.ndim - nax:]
    rest = data.draw(strat.shapes(0, 2, min_side=1, max_side=3), label="rest")
    b = data.draw(strat.arrays(dt, (*contracted, *rest), finite=True, min_value=-50,
                               max_value=50))
    if data.draw(st.booleans(), label="axes as pairs"):
        ax = (list(range(a.ndim - nax, a.ndim)), list(range(nax)))
        if nax and data.draw(st.booleans(), label="negative axes"):
            ax = ([i - a.ndim for i in ax[0]], ax[1])
        differential("tensordot", a, b, axes=ax, _rtol=_tol(dt))
    else:
        differential("tensordot", a, b, axes=nax, _rtol=_tol(dt))


def shapes(lo: int, hi: int):
    return strat.shapes(lo, hi, min_side=1, max_side=3)


@given(data=st.data())
def test_vecdot(data) -> None:
    dt = data.draw(strat.dtypes("numeric"), label="dtype")
    s = data.draw(shapes(1, 3), label="shape")
    axis = data.draw(st.integers(-len(s), -1), label="axis")
    a = data.draw(strat.arrays(dt, s, finite=True, min_value=-50, max_value=50))
    b = data.draw(strat.arrays(dt, s[1:] if len(s) > 1 and data.draw(st.booleans()) and
                               axis != -len(s) else s,
                               finite=True, min_value=-50, max_value=50))
    differential("vecdot", a, b, axis=axis, _rtol=_tol(dt))


def test_vecdot_conjugates_first_argument() -> None:
    a = ha.asarray(np.array([1j, 2.0]))
    b = ha.asarray(np.array([1j, 1.0]))
    r = ha_fn("vecdot")(a, b)
    assert complex(r) == complex(np.vdot([1j, 2.0], [1j, 1.0]))  # conj(1j)*1j + 2 = 3


def test_matmul_operator_and_function_agree() -> None:
    a = ha.asarray(np.arange(6.0).reshape(2, 3))
    b = ha.asarray(np.arange(3.0))
    np.testing.assert_array_equal(np.asarray(a @ b), np.asarray(ha_fn("matmul")(a, b)))


@pytest.mark.device
def test_matmul_on_device(cl_device) -> None:
    a = ha.asarray(np.eye(3), device=cl_device)
    b = ha.asarray(np.arange(9.0).reshape(3, 3), device=cl_device)
    r = ha_fn("matmul")(a, b)
    assert r.device == cl_device
    np.testing.assert_array_equal(np.asarray(r), np.arange(9.0).reshape(3, 3))
