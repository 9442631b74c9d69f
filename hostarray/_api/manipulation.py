"""Manipulation functions of the array API standard.

Functions that numpy answers with a view (``reshape``, ``permute_dims``,
``expand_dims``, ``squeeze``, ``broadcast_to`` ...) return a view of the
input's storage, so the result shares its coherence state.
"""

from __future__ import annotations

import numpy as np

from .._array import HostPtrArray, _view
from .._placement import result_device
from ._common import dev_of, host, result, view_of

__all__ = ["broadcast_arrays", "broadcast_shapes", "broadcast_to", "concat", "expand_dims",
           "flip", "moveaxis", "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack",
           "tile", "unstack"]


def _same_memory_view(x: HostPtrArray, r: np.ndarray) -> HostPtrArray:
    """``r`` as a view of ``x`` if it is one, else as a new array on ``x``'s device."""
    if r.base is not None and np.may_share_memory(r, x._a):
        return _view(x, r)
    return result(r, dev_of(x))


def broadcast_arrays(*arrays: HostPtrArray) -> tuple[HostPtrArray, ...]:
    """Views of ``arrays`` broadcast against each other (a tuple).

    Examples
    --------
    >>> import hostarray as ha
    >>> a, b = ha.broadcast_arrays(ha.zeros((2, 1)), ha.zeros(3))
    >>> a.shape, b.shape
    ((2, 3), (2, 3))
    """
    result_device(*arrays)
    # fresh views in: numpy marks the arrays it returns read-only, and for an input that
    # needs no broadcasting it returns that very object (it must not be the storage's own)
    views = np.broadcast_arrays(*(view_of(a)[...] for a in arrays))
    for v in views:
        v.flags.writeable = False  # as broadcast_to: a write would hit repeated elements
    return tuple(_view(a, v) for a, v in zip(arrays, views))


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The shape that broadcasting ``shapes`` against each other gives.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    return tuple(int(n) for n in np.broadcast_shapes(*shapes))


def broadcast_to(x: HostPtrArray, /, shape: tuple[int, ...]) -> HostPtrArray:
    """A read-only view of ``x`` broadcast to ``shape``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.broadcast_to(ha.asarray([1, 2]), (2, 2))
    HostPtrArray([[1, 2],
                  [1, 2]], dtype=int64)
    """
    return _view(x, np.broadcast_to(view_of(x), shape))


def concat(arrays: tuple[HostPtrArray, ...] | list[HostPtrArray], /, *,
           axis: int | None = 0) -> HostPtrArray:
    """Join ``arrays`` along an existing axis (flattened first if ``axis`` is None).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.concat([ha.asarray([1, 2]), ha.asarray([3])])
    HostPtrArray([1, 2, 3], dtype=int64)
    """
    dev = result_device(*arrays)
    return result(np.concatenate([host(a) for a in arrays], axis=axis), dev)


def expand_dims(x: HostPtrArray, /, axis: int | tuple[int, ...]) -> HostPtrArray:
    """A view of ``x`` with a new axis of size one at ``axis`` (or at each of a tuple of
    positions in the result).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.expand_dims(ha.zeros(3), axis=(0, -1)).shape
    (1, 3, 1)
    """
    a = view_of(x)
    axes = axis if isinstance(axis, tuple) else (axis,)
    n = a.ndim + len(axes)
    norm = tuple(ax + n if ax < 0 else ax for ax in axes)
    if any(not 0 <= ax < n for ax in norm):
        raise IndexError(f"axis {axis} is out of bounds for the result's {n} dimensions")
    if len(set(norm)) != len(norm):
        raise ValueError(f"repeated axis in {axis}")
    return _view(x, np.expand_dims(a, norm))


def flip(x: HostPtrArray, /, *, axis: int | tuple[int, ...] | None = None) -> HostPtrArray:
    """A view of ``x`` with the order of elements reversed along ``axis`` (all axes if None).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.flip(ha.asarray([1, 2, 3]))
    HostPtrArray([3, 2, 1], dtype=int64)
    """
    a = view_of(x)
    if a.ndim == 0:  # numpy flips a 0-d array by indexing it with (): a scalar copy
        return _view(x, a[...])
    return _view(x, np.flip(a, axis=axis))


def moveaxis(x: HostPtrArray, source: int | tuple[int, ...],
             destination: int | tuple[int, ...], /) -> HostPtrArray:
    """A view of ``x`` with axes moved from ``source`` to ``destination``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.moveaxis(ha.zeros((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """
    return _view(x, np.moveaxis(view_of(x), source, destination))


def permute_dims(x: HostPtrArray, /, axes: tuple[int, ...]) -> HostPtrArray:
    """A view of ``x`` with its axes permuted (negative axes count from the end).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.permute_dims(ha.zeros((2, 3, 4)), (-1, 0, 1)).shape
    (4, 2, 3)
    """
    return _view(x, np.transpose(x._a, axes))  # a view reads nothing: no acquire


def repeat(x: HostPtrArray, repeats: int | HostPtrArray, /, *,
           axis: int | None = None) -> HostPtrArray:
    """Each element of ``x`` repeated ``repeats`` times (flattened first if ``axis`` is None).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.repeat(ha.asarray([1, 2]), 2)
    HostPtrArray([1, 1, 2, 2], dtype=int64)
    """
    dev = result_device(x, repeats)
    r = repeats._host() if isinstance(repeats, HostPtrArray) else repeats
    if isinstance(r, np.ndarray) and r.dtype == np.uint64:
        r = r.astype(np.int64)  # numpy refuses uint64 counts (no safe cast to intp)
    return result(np.repeat(host(x), r, axis=axis), dev)


def reshape(x: HostPtrArray, /, shape: tuple[int, ...], *,
            copy: bool | None = None) -> HostPtrArray:
    """``x`` with a new shape: a view where the layout allows (``copy=False`` insists on one,
    ``copy=True`` always copies).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.reshape(ha.arange(6), (2, -1))
    HostPtrArray([[0, 1, 2],
                  [3, 4, 5]], dtype=int64)
    """
    if not copy:
        try:  # a view reads nothing: no acquire
            return _view(x, np.reshape(x._a, shape, copy=False))
        except ValueError:
            if copy is False:
                raise
    # a shape numpy refuses is refused before x is read (an all-zero-strides stand-in
    # reshapes without reading or copying anything)
    np.reshape(np.broadcast_to(np.zeros((), x._a.dtype), x._a.shape), shape)
    return result(np.reshape(host(x), shape, copy=True), dev_of(x))


def roll(x: HostPtrArray, /, shift: int | tuple[int, ...], *,
         axis: int | tuple[int, ...] | None = None) -> HostPtrArray:
    """Elements of ``x`` shifted along ``axis`` with wrap-around (flattened if None).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.roll(ha.asarray([1, 2, 3]), 1)
    HostPtrArray([3, 1, 2], dtype=int64)
    """
    return result(np.roll(host(x), shift, axis=axis), dev_of(x))


def squeeze(x: HostPtrArray, /, axis: int | tuple[int, ...]) -> HostPtrArray:
    """A view of ``x`` without the size-one axes ``axis`` (``ValueError`` if one is not size one).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.squeeze(ha.zeros((1, 3, 1)), axis=(0, 2)).shape
    (3,)
    """
    return _view(x, np.squeeze(view_of(x), axis=axis))


def stack(arrays: tuple[HostPtrArray, ...] | list[HostPtrArray], /, *,
          axis: int = 0) -> HostPtrArray:
    """Join ``arrays`` (of one shape) along a new axis.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.stack([ha.asarray([1, 2]), ha.asarray([3, 4])], axis=1)
    HostPtrArray([[1, 3],
                  [2, 4]], dtype=int64)
    """
    dev = result_device(*arrays)
    return result(np.stack([host(a) for a in arrays], axis=axis), dev)


def tile(x: HostPtrArray, repetitions: tuple[int, ...], /) -> HostPtrArray:
    """``x`` repeated ``repetitions[i]`` times along each axis.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.tile(ha.asarray([1, 2]), (2,))
    HostPtrArray([1, 2, 1, 2], dtype=int64)
    """
    return result(np.tile(host(x), repetitions), dev_of(x))


def unstack(x: HostPtrArray, /, *, axis: int = 0) -> tuple[HostPtrArray, ...]:
    """Views of ``x`` split along ``axis`` (a tuple).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.unstack(ha.asarray([[1, 2], [3, 4]]))
    (HostPtrArray([1, 2], dtype=int64), HostPtrArray([3, 4], dtype=int64))
    """
    a = view_of(x)
    if a.ndim == 0:
        raise ValueError("unstack needs at least one dimension")
    # pieces by indexing, not by iterating over numpy's result: iteration gives numpy
    # scalars (copies taken without an acquire) for a 1-D array, not views
    pieces = np.moveaxis(a, axis, 0)
    return tuple(_view(x, pieces[i, ...]) for i in range(pieces.shape[0]))
