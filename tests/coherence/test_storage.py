"""Aligned host storage and the minimal array surface (no device needed)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hostarray as ha
from hostarray._storage import PAD, PAGE_SIZE, address_of, aligned_empty


@given(st.integers(0, 3 * PAGE_SIZE))
def test_aligned_empty_starts_on_a_page_and_is_padded(n: int) -> None:
    a = aligned_empty(n)
    assert a.nbytes == n
    assert address_of(a) % PAGE_SIZE == 0
    # the allocation behind it reaches at least to the next multiple of PAD
    assert a.base.nbytes - (address_of(a) - address_of(a.base)) >= max(PAD, -(-n // PAD) * PAD)


@pytest.mark.parametrize("make", [lambda: ha.empty((3, 5), dtype=ha.float32),
                                  lambda: ha.zeros(7, dtype=ha.int16),
                                  lambda: ha.asarray([1, 2, 3], copy=True)])
def test_creation_is_page_aligned(make) -> None:
    x = make()
    assert x._s.address % PAGE_SIZE == 0


def test_views_share_one_storage() -> None:
    x = ha.zeros((4, 4))
    v = x[1:3, ::2]
    assert v._s is x._s
    v[...] = 5
    assert np.asarray(x)[1, 0] == 5 and np.asarray(x)[1, 1] == 0
    x[2, 2] = 7
    assert float(np.asarray(v)[1, 1]) == 7


def test_asarray_reuses_numpy_memory_on_host() -> None:
    a = np.arange(10.0)
    x = ha.asarray(a)
    assert np.shares_memory(np.asarray(x), a)
    y = ha.asarray(a, copy=False)
    # a's memory, not a itself (hostarray's views don't hold the user's array), and the
    # storage adopted the first time: one memory range, one state
    assert np.shares_memory(y._a, a) and y._s is x._s
    c = ha.asarray(a, copy=True)
    assert not np.shares_memory(np.asarray(c), a)
    assert c._s.address % PAGE_SIZE == 0


def test_asarray_copy_false_raises_when_a_copy_is_needed() -> None:
    with pytest.raises(ValueError):
        ha.asarray([1, 2, 3], copy=False)
    with pytest.raises(ValueError):
        ha.asarray(ha.zeros(3), dtype=ha.int32, copy=False)


def test_asarray_dtypes_follow_python_scalars() -> None:
    assert ha.asarray(True).dtype == ha.bool
    assert ha.asarray(1).dtype == ha.int64
    assert ha.asarray(1.5).dtype == ha.float64
    assert ha.asarray(1j).dtype == ha.complex128
    assert ha.asarray([1, 2], dtype=ha.float32).dtype == ha.float32


def test_minimal_attributes_and_repr() -> None:
    x = ha.zeros((2, 3), dtype=ha.int32)
    assert (x.shape, x.ndim, x.size, x.dtype) == ((2, 3), 2, 6, np.dtype("int32"))
    assert x.device == ha.device("cpu")
    assert repr(x).startswith("HostPtrArray([[0, 0, 0]")
    assert "int32" in repr(x)


def test_array_protocol_dtype_and_copy() -> None:
    x = ha.asarray(np.arange(4, dtype=np.int32))
    assert np.asarray(x, dtype=np.int32).dtype == np.int32
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError):
        x.__array__(dtype=np.float64, copy=False)
    c = x.__array__(copy=True)
    c[0] = 99
    assert int(np.asarray(x)[0]) == 0


def test_object_dtypes_are_refused() -> None:
    with pytest.raises(TypeError, match="numeric"):
        ha.asarray(np.array(["a", "b"]))


def test_construction_directly_is_refused() -> None:
    with pytest.raises(TypeError, match="asarray"):
        ha.HostPtrArray()
