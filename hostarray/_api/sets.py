"""Set functions of the array API standard.

NaNs are distinct values, as specified; unique values come out sorted (the
standard leaves the order open; numpy's ``unique_values`` no longer sorts).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._array import HostPtrArray
from .._placement import result_device
from ._common import as_host, dev_of, host, result

__all__ = ["isin", "unique_all", "unique_counts", "unique_inverse", "unique_values",
           "UniqueAllResult", "UniqueCountsResult", "UniqueInverseResult"]


class UniqueAllResult(NamedTuple):
    """Result of :func:`unique_all`."""

    values: HostPtrArray
    indices: HostPtrArray
    inverse_indices: HostPtrArray
    counts: HostPtrArray


class UniqueCountsResult(NamedTuple):
    """Result of :func:`unique_counts`."""

    values: HostPtrArray
    counts: HostPtrArray


class UniqueInverseResult(NamedTuple):
    """Result of :func:`unique_inverse`."""

    values: HostPtrArray
    inverse_indices: HostPtrArray


def unique_all(x: HostPtrArray, /) -> UniqueAllResult:
    """Unique elements of ``x`` with first indices, inverse indices (``x``'s shape) and counts.

    Examples
    --------
    >>> import hostarray as ha
    >>> r = ha.unique_all(ha.asarray([3, 1, 3]))
    >>> r.values, r.counts
    (HostPtrArray([1, 3], dtype=int64), HostPtrArray([1, 2], dtype=int64))
    """
    a = host(x)
    v, i, inv, c = np.unique(a, return_index=True, return_inverse=True, return_counts=True,
                             equal_nan=False)
    d = dev_of(x)
    return UniqueAllResult(result(v, d), result(i, d), result(inv.reshape(a.shape), d),
                           result(c, d))


def unique_counts(x: HostPtrArray, /) -> UniqueCountsResult:
    """Unique elements of ``x`` and how often each occurs.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.unique_counts(ha.asarray([2, 2, 5])).counts
    HostPtrArray([2, 1], dtype=int64)
    """
    v, c = np.unique(host(x), return_counts=True, equal_nan=False)
    d = dev_of(x)
    return UniqueCountsResult(result(v, d), result(c, d))


def unique_inverse(x: HostPtrArray, /) -> UniqueInverseResult:
    """Unique elements of ``x`` and, for each element of ``x``, the index of its value.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.unique_inverse(ha.asarray([5, 2, 5])).inverse_indices
    HostPtrArray([1, 0, 1], dtype=int64)
    """
    a = host(x)
    v, inv = np.unique(a, return_inverse=True, equal_nan=False)
    d = dev_of(x)
    return UniqueInverseResult(result(v, d), result(inv.reshape(a.shape), d))


def unique_values(x: HostPtrArray, /) -> HostPtrArray:
    """Unique elements of ``x``, sorted (each NaN is its own value).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.unique_values(ha.asarray([3, 1, 3]))
    HostPtrArray([1, 3], dtype=int64)
    """
    return result(np.unique(host(x), equal_nan=False), dev_of(x))


def isin(x1: HostPtrArray | int, x2: HostPtrArray | int, /, *,
         invert: bool = False) -> HostPtrArray:
    """Whether each element of ``x1`` occurs in ``x2`` (or not, with ``invert=True``).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.isin(ha.asarray([1, 2, 3]), ha.asarray([2, 4]))
    HostPtrArray([False,  True, False], dtype=bool)
    """
    dev = result_device(x1, x2)
    return result(np.isin(as_host(x1), as_host(x2), invert=invert), dev)
