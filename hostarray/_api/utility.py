"""Utility functions of the array API standard."""

from __future__ import annotations

import numpy as np

from .._array import HostPtrArray
from .._placement import device_newest, result_device, try_device
from ._common import dev_of, host, result

__all__ = ["all", "any", "diff"]


def all(x: HostPtrArray, /, *, axis: int | tuple[int, ...] | None = None,  # noqa: A001
        keepdims: bool = False) -> HostPtrArray:
    """Whether every element of ``x`` along ``axis`` is true (nonzero).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.all(ha.asarray([1, 0, 2]))
    HostPtrArray(False, dtype=bool)
    """
    if device_newest(x):
        r = try_device("all", (x,), axis=axis, keepdims=keepdims)
        if r is not None:
            return r
    return result(host(x).all(axis=axis, keepdims=keepdims), dev_of(x))


def any(x: HostPtrArray, /, *, axis: int | tuple[int, ...] | None = None,  # noqa: A001
        keepdims: bool = False) -> HostPtrArray:
    """Whether any element of ``x`` along ``axis`` is true (nonzero).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.any(ha.asarray([0, 0, 2]))
    HostPtrArray(True, dtype=bool)
    """
    if device_newest(x):
        r = try_device("any", (x,), axis=axis, keepdims=keepdims)
        if r is not None:
            return r
    return result(host(x).any(axis=axis, keepdims=keepdims), dev_of(x))


def diff(x: HostPtrArray, /, *, axis: int = -1, n: int = 1,
         prepend: HostPtrArray | None = None,
         append: HostPtrArray | None = None) -> HostPtrArray:
    """The ``n``-th discrete difference of ``x`` along ``axis`` (after joining ``prepend``
    and ``append``).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.diff(ha.asarray([1, 4, 9, 16]))
    HostPtrArray([3, 5, 7], dtype=int64)
    """
    dev = result_device(x, prepend, append)
    kw = {}
    if prepend is not None:
        kw["prepend"] = host(prepend)
    if append is not None:
        kw["append"] = host(append)
    return result(np.diff(host(x), n=n, axis=axis, **kw), dev)
