"""Sorting functions of the array API standard."""

from __future__ import annotations

from typing import Literal

import numpy as np

from .._array import HostPtrArray
from ._common import dev_of, host, result

__all__ = ["argsort", "sort"]


def argsort(x: HostPtrArray, /, *, axis: int = -1, descending: bool = False,
            stable: bool = True) -> HostPtrArray:
    """Indices that sort ``x`` along ``axis``; a stable sort keeps equal elements in their
    original order, also when ``descending``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.argsort(ha.asarray([3, 1, 3, 2]), descending=True)
    HostPtrArray([0, 2, 3, 1], dtype=int64)
    """
    a = host(x)
    kind: Literal["stable"] | None = "stable" if stable else None
    if not descending:
        return result(np.argsort(a, axis=axis, kind=kind), dev_of(x))
    if a.ndim == 0:
        return result(np.argsort(a, axis=axis, kind=kind), dev_of(x))
    # sorting the reversed array ascending and reversing back keeps ties in order
    n = a.shape[axis]
    r = np.flip(np.argsort(np.flip(a, axis=axis), axis=axis, kind=kind), axis=axis)
    return result(np.subtract(n - 1, r, dtype=r.dtype), dev_of(x))


def sort(x: HostPtrArray, /, *, axis: int = -1, descending: bool = False,
         stable: bool = True) -> HostPtrArray:
    """A sorted copy of ``x`` along ``axis``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.sort(ha.asarray([3, 1, 2]), descending=True)
    HostPtrArray([3, 2, 1], dtype=int64)
    """
    a = host(x)
    r = np.sort(a, axis=axis, kind="stable" if stable else None)
    if descending:
        r = np.flip(r, axis=axis).copy()
    return result(r, dev_of(x))
