"""Creation functions of the array API standard."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._array import HostPtrArray, _new, _shareable, aligned_copy, aligned_zeros, wrap
from .._devices import HOST, Device
from .._devices import device as _parse_device
from .._storage import Storage, aligned_empty

__all__ = ["asarray", "empty", "zeros"]


def _dtype(dtype: Any) -> np.dtype | None:
    return None if dtype is None else np.dtype(dtype)


def _shape(shape: int | tuple[int, ...]) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)


def _result_device(device: Any) -> Device:
    return HOST if device is None else _parse_device(device)


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None,
            copy: bool | None = None) -> HostPtrArray:
    """Convert ``obj`` to a ``HostPtrArray``, sharing memory where possible.

    A numpy array is reused without a copy on the host, and on a device when
    its memory meets the device's alignment; otherwise it is copied into
    page-aligned storage.  ``copy=True`` always copies, ``copy=False`` never
    does (``ValueError`` if sharing is impossible).

    Examples
    --------
    >>> import numpy as np, hostarray as ha
    >>> a = np.arange(4.0)
    >>> x = ha.asarray(a)
    >>> np.shares_memory(np.asarray(x), a)
    True
    >>> ha.asarray([1, 2, 3]).dtype
    dtype('int64')
    """
    dt = _dtype(dtype)
    if isinstance(obj, HostPtrArray):
        dev = obj._device if device is None else _parse_device(device)
        if copy is not True and (dt is None or dt == obj.dtype):
            return obj if dev == obj._device else obj.to_device(dev)
        if copy is False:
            raise ValueError(f"converting {obj.dtype} to {dt} needs a copy; pass copy=None")
        src = obj._host()
        return wrap(aligned_copy(src if dt is None else src.astype(dt)), dev)
    dev = _result_device(device)
    if isinstance(obj, np.ndarray) and copy is not True and (dt is None or dt == obj.dtype):
        _check_dtype(obj.dtype)
        s = Storage(obj)
        if dev.framework == "host" or _shareable(s, dev):
            return _new(obj, s, dev)
        if copy is False:
            raise ValueError(f"this numpy array's memory can't be shared with {dev} "
                             f"(alignment {dev.alignment} bytes, or not contiguous); pass "
                             f"copy=None to copy it into aligned storage")
        return wrap(aligned_copy(obj), dev)
    if copy is False:
        try:
            a = np.asarray(obj, dtype=dt, copy=False)
        except ValueError:
            raise ValueError(f"a {type(obj).__name__} can't be shared without a copy; pass "
                             f"copy=None") from None
        _check_dtype(a.dtype)
        s = Storage(a)
        if dev.framework != "host" and not _shareable(s, dev):
            raise ValueError(f"this memory can't be shared with {dev}; pass copy=None")
        return _new(a, s, dev)
    a = np.asarray(obj, dtype=dt)
    _check_dtype(a.dtype)
    if copy or a.base is None:  # a fresh array (or one to copy): into aligned storage
        a = aligned_copy(a)
    return _new(a, Storage(a), dev) if dev.framework == "host" else wrap(a, dev)


def _check_dtype(dt: np.dtype) -> None:
    if dt.hasobject or dt.kind in "USVMm" or dt.fields is not None:
        raise TypeError(f"hostarray holds bool and numeric data only, not {dt}; convert "
                        f"with numpy first")


def empty(shape: int | tuple[int, ...], *, dtype: Any = None,
          device: Any = None) -> HostPtrArray:
    """An uninitialised array in page-aligned storage.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.empty((2, 3)).shape
    (2, 3)
    """
    dt = np.dtype(np.float64 if dtype is None else dtype)
    shp = _shape(shape)
    n = int(np.prod(shp, dtype=np.int64)) * dt.itemsize
    a = aligned_empty(n).view(dt).reshape(shp)
    return _new(a, Storage(a), _result_device(device))


def zeros(shape: int | tuple[int, ...], *, dtype: Any = None,
          device: Any = None) -> HostPtrArray:
    """An array of zeros in page-aligned storage.

    Examples
    --------
    >>> import hostarray as ha
    >>> print(ha.zeros(3))
    [0. 0. 0.]
    """
    dt = np.dtype(np.float64 if dtype is None else dtype)
    a = aligned_zeros(_shape(shape), dt)
    return _new(a, Storage(a), _result_device(device))

