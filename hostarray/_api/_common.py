"""Helpers shared by the namespace modules: host reads, devices of results, wrapping.

Every namespace function reads its inputs through :func:`host` (one flag test
when nothing must move) and returns :func:`result` on the inputs' device
(compute follows data).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._array import HostPtrArray, _new, wrap
from .._devices import HOST, Device
from .._devices import default_device as _default_device
from .._devices import device as _parse_device
from .._storage import Storage

__all__ = ["HostPtrArray", "dev_of", "host", "view_of", "result", "join_devices", "device_of",
           "out_device", "as_host", "normalize_axis", "ndarray"]

ndarray = np.ndarray
_SCALARS = (bool, int, float, complex)


def host(x: HostPtrArray) -> np.ndarray:
    """The numpy view of ``x`` for a host read; ``TypeError`` for anything else."""
    if type(x) is not HostPtrArray:
        if isinstance(x, HostPtrArray):
            return x._host()
        if isinstance(x, (np.ndarray, np.generic, *_SCALARS)):
            return np.asarray(x)  # numpy input is accepted (host memory, host result)
        raise TypeError(f"expected a hostarray array, got {type(x).__name__}")
    s = x._s
    if s.host_stale:
        s.sync_for_host_read(x._a)
    return x._a


def view_of(x: HostPtrArray) -> np.ndarray:
    """The numpy view of ``x`` for building a view of it: no host read, so nothing is
    acquired (a view reads no byte; the next read of it acquires what it covers);
    ``TypeError`` for anything but a HostPtrArray."""
    if isinstance(x, HostPtrArray):
        return x._a
    raise TypeError(f"expected a hostarray array, got {type(x).__name__}")


def as_host(x: Any) -> Any:
    """``x``'s numpy view if it is a HostPtrArray, else ``x`` unchanged (scalars)."""
    if isinstance(x, HostPtrArray):
        s = x._s
        if s.host_stale:
            s.sync_for_host_read(x._a)
        return x._a
    return x


def dev_of(x: Any) -> Device:
    """``x``'s device (the host for numpy input)."""
    return x._device if isinstance(x, HostPtrArray) else HOST


def join_devices(d1: Device, d2: Device) -> Device:
    """The device of a result computed from inputs on ``d1`` and ``d2``."""
    if d1 is d2 or d1 == d2:
        return d1
    if d1.framework == "host":
        return d2
    if d2.framework == "host":
        return d1
    raise ValueError(f"arrays on two different devices ({d1} and {d2}); move one with "
                     f"x.to_device(...) first")


def device_of(*xs: Any) -> Device:
    """The device results of an operation on ``xs`` go to (non-arrays are ignored)."""
    d = HOST
    for x in xs:
        if isinstance(x, HostPtrArray):
            xd = x._device
            if xd is not d:
                d = join_devices(d, xd)
    return d


def out_device(device: Any, default: Device | None = None) -> Device:
    """A ``device=`` argument as a Device (``None``: ``default``, else the default device)."""
    if device is None:
        return _default_device() if default is None else default
    if type(device) is Device:
        return device
    return _parse_device(device)


def result(r: Any, d: Device = HOST) -> HostPtrArray:
    """Wrap a fresh numpy result (or numpy scalar) on device ``d``."""
    if type(r) is ndarray and d is HOST:
        return _new(r, Storage(r), HOST)
    return wrap(r, d)


def normalize_axis(axis: int, ndim: int) -> int:
    """``axis`` in ``range(ndim)``; ``IndexError`` outside ``[-ndim, ndim)``."""
    if not -ndim <= axis < ndim:
        raise IndexError(f"axis {axis} is out of bounds for an array of {ndim} dimensions")
    return axis % ndim if ndim else 0
