"""Linear algebra functions of the array API standard's main namespace."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._array import HostPtrArray, _view
from .._compute import implementation
from ._common import device_of, host, result, view_of
from .statistical import device_reduction

__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]

HPA = HostPtrArray


def _device_newest(x1: object, x2: object) -> bool:
    """Whether an operand has bytes newer on a device (then the device may compute)."""
    return (type(x1) is HPA and x1._s.host_stale) or (type(x2) is HPA and x2._s.host_stale)


def matmul(x1: HostPtrArray, x2: HostPtrArray, /) -> HostPtrArray:
    """Matrix product of ``x1`` and ``x2`` (stacks broadcast; 1-D operands are vectors).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.matmul(ha.asarray([[1, 2], [3, 4]]), ha.asarray([1, 1]))
    HostPtrArray([3, 7], dtype=int64)
    """
    if _device_newest(x1, x2):
        r = implementation("matmul", "device_matmul")(x1, x2)
        if r is not None:
            return r
    dev = device_of(x1, x2)
    return result(np.matmul(host(x1), host(x2)), dev)


def matrix_transpose(x: HostPtrArray, /) -> HostPtrArray:
    """A view of ``x`` with its last two axes swapped.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.matrix_transpose(ha.zeros((2, 3, 4))).shape
    (2, 4, 3)
    """
    a = view_of(x)
    if a.ndim < 2:
        raise ValueError("matrix_transpose needs at least two dimensions")
    return _view(x, np.swapaxes(a, -1, -2))


def tensordot(x1: HostPtrArray, x2: HostPtrArray, /, *,
              axes: int | tuple[Sequence[int], Sequence[int]] = 2) -> HostPtrArray:
    """Tensor contraction of ``x1`` and ``x2`` over ``axes``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.tensordot(ha.ones((2, 3)), ha.ones((3, 4)), axes=1).shape
    (2, 4)
    """
    if _device_newest(x1, x2):
        r = implementation("matmul", "device_tensordot")(x1, x2, axes)
        if r is not None:
            return r
    dev = device_of(x1, x2)
    return result(np.tensordot(host(x1), host(x2), axes=axes), dev)


def vecdot(x1: HostPtrArray, x2: HostPtrArray, /, *, axis: int = -1) -> HostPtrArray:
    """Dot product of vectors along ``axis`` (the first operand conjugated), broadcast.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.vecdot(ha.asarray([1, 2, 3]), ha.asarray([4, 5, 6]))
    HostPtrArray(32, dtype=int64)
    """
    if (type(x1) is HostPtrArray and x1._s.host_stale) or \
            (type(x2) is HostPtrArray and x2._s.host_stale):
        r = device_reduction("vecdot", (x1, x2), axis=axis)
        if r is not None:
            return r
    dev = device_of(x1, x2)
    # numpy's stubs omit the gufunc's axis keyword
    return result(np.vecdot(host(x1), host(x2), axis=axis), dev)  # type: ignore[call-overload]
