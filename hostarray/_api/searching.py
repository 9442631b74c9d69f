"""Searching functions of the array API standard."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from .._array import HostPtrArray
from .._placement import device_newest, result_device, try_device
from ._common import as_host, dev_of, host, result

__all__ = ["argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where"]


def argmax(x: HostPtrArray, /, *, axis: int | None = None,
           keepdims: bool = False) -> HostPtrArray:
    """Index of the first largest element of ``x`` (flattened if ``axis`` is None).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.argmax(ha.asarray([1, 5, 5]))
    HostPtrArray(1, dtype=int64)
    """
    if device_newest(x):
        r = try_device("argmax", (x,), axis=axis, keepdims=keepdims)
        if r is not None:
            return r
    return result(host(x).argmax(axis=axis, keepdims=keepdims),  # type: ignore[arg-type]
                  dev_of(x))


def argmin(x: HostPtrArray, /, *, axis: int | None = None,
           keepdims: bool = False) -> HostPtrArray:
    """Index of the first smallest element of ``x`` (flattened if ``axis`` is None).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.argmin(ha.asarray([3, 1, 1]))
    HostPtrArray(1, dtype=int64)
    """
    if device_newest(x):
        r = try_device("argmin", (x,), axis=axis, keepdims=keepdims)
        if r is not None:
            return r
    return result(host(x).argmin(axis=axis, keepdims=keepdims),  # type: ignore[arg-type]
                  dev_of(x))


def count_nonzero(x: HostPtrArray, /, *, axis: int | tuple[int, ...] | None = None,
                  keepdims: bool = False) -> HostPtrArray:
    """Number of nonzero elements of ``x`` along ``axis``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.count_nonzero(ha.asarray([0, 1, 2]))
    HostPtrArray(2, dtype=int64)
    """
    r = np.count_nonzero(host(x), axis=axis, keepdims=keepdims)
    return result(np.asarray(r, dtype=np.int64), dev_of(x))


def nonzero(x: HostPtrArray, /) -> tuple[HostPtrArray, ...]:
    """Indices of the nonzero elements of ``x``, one array per axis.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.nonzero(ha.asarray([0, 3, 0, 4]))
    (HostPtrArray([1, 3], dtype=int64),)
    """
    a = host(x)
    if a.ndim == 0:
        raise ValueError("nonzero is not defined for zero-dimensional arrays")
    return tuple(result(i, dev_of(x)) for i in np.nonzero(a))


def searchsorted(x1: HostPtrArray, x2: HostPtrArray | int | float, /, *,
                 side: Literal["left", "right"] = "left",
                 sorter: HostPtrArray | None = None) -> HostPtrArray:
    """Indices where the elements of ``x2`` would be inserted into the sorted 1-D ``x1``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.searchsorted(ha.asarray([1, 3, 5]), ha.asarray([3, 4]), side="right")
    HostPtrArray([2, 2], dtype=int64)
    """
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', not {side!r}")
    dev = result_device(x1, x2, sorter)
    s = None if sorter is None else host(sorter)
    return result(np.searchsorted(host(x1), as_host(x2), side=side, sorter=s), dev)


def where(condition: HostPtrArray, x1: HostPtrArray | Any, x2: HostPtrArray | Any,
          /) -> HostPtrArray:
    """Elements of ``x1`` where ``condition`` is true, of ``x2`` elsewhere (broadcast;
    ``x1`` and ``x2`` may be Python scalars).  Computed by the device holding the
    operands' newest data where the placement rule says so (``hostarray._placement``).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.where(ha.asarray([True, False]), ha.asarray([1, 2]), 0)
    HostPtrArray([1, 0], dtype=int64)
    """
    if device_newest(condition) or device_newest(x1) or device_newest(x2):
        r = try_device("where", (condition, x1, x2))  # a device holds newer data
        if r is not None:
            return r
    dev = result_device(condition, x1, x2)
    return result(np.where(host(condition), as_host(x1), as_host(x2)), dev)
