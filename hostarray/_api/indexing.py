"""Indexing functions of the array API standard."""

from __future__ import annotations

import numpy as np

from .._array import HostPtrArray
from .._placement import result_device
from ._common import host, result

__all__ = ["take", "take_along_axis"]


def take(x: HostPtrArray, indices: HostPtrArray, /, *, axis: int | None = None) -> HostPtrArray:
    """Elements of ``x`` at ``indices`` along ``axis`` (``axis`` may be omitted for 1-D ``x``).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.take(ha.asarray([10, 20, 30]), ha.asarray([2, 0]))
    HostPtrArray([30, 10], dtype=int64)
    """
    a = host(x)
    if axis is None:
        if a.ndim != 1:
            raise ValueError("take needs an axis for arrays of more than one dimension")
        axis = 0
    dev = result_device(x, indices)
    return result(np.take(a, host(indices), axis=axis), dev)


def take_along_axis(x: HostPtrArray, indices: HostPtrArray, /, *,
                    axis: int = -1) -> HostPtrArray:
    """Elements of ``x`` at ``indices`` matched one to one along ``axis``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.take_along_axis(ha.asarray([[3, 1], [2, 4]]), ha.asarray([[1], [0]]), axis=1)
    HostPtrArray([[1],
                  [2]], dtype=int64)
    """
    dev = result_device(x, indices)
    return result(np.take_along_axis(host(x), host(indices), axis=axis), dev)
