"""Linear algebra functions of the array API standard's main namespace."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._array import HostPtrArray, _view
from .._placement import device_newest, result_device, try_device
from ._common import host, result, view_of

__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]

HPA = HostPtrArray


def matmul(x1: HostPtrArray, x2: HostPtrArray, /) -> HostPtrArray:
    """Matrix product of ``x1`` and ``x2`` (stacks broadcast; 1-D operands are vectors).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.matmul(ha.asarray([[1, 2], [3, 4]]), ha.asarray([1, 1]))
    HostPtrArray([3, 7], dtype=int64)
    """
    if device_newest(x1) or device_newest(x2):
        r = try_device("matmul", (x1, x2))
        if r is not None:
            return r
    dev = result_device(x1, x2)
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
    if device_newest(x1) or device_newest(x2):
        r = try_device("tensordot", (x1, x2), axes=axes)
        if r is not None:
            return r
    dev = result_device(x1, x2)
    return result(np.tensordot(host(x1), host(x2), axes=axes), dev)


def vecdot(x1: HostPtrArray, x2: HostPtrArray, /, *, axis: int = -1) -> HostPtrArray:
    """Dot product of vectors along ``axis`` (the first operand conjugated), broadcast.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.vecdot(ha.asarray([1, 2, 3]), ha.asarray([4, 5, 6]))
    HostPtrArray(32, dtype=int64)
    """
    if device_newest(x1) or device_newest(x2):
        r = try_device("vecdot", (x1, x2), axis=axis)
        if r is not None:
            return r
    dev = result_device(x1, x2)
    # numpy's stubs omit the gufunc's axis keyword
    return result(np.vecdot(host(x1), host(x2), axis=axis), dev)  # type: ignore[call-overload]
