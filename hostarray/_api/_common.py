"""Helpers shared by the namespace modules: host reads and wrapping.

Every namespace function reads its inputs through :func:`host` (one flag test
when nothing must move) and returns :func:`result` on the inputs' device (compute
follows data: :func:`hostarray._placement.result_device`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._array import HostPtrArray, _new, wrap
from .._devices import HOST, Device
from .._storage import Storage

__all__ = ["HostPtrArray", "dev_of", "host", "view_of", "result", "as_host", "normalize_axis",
           "ndarray"]

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
    return x._host() if x._s.host_stale else x._a


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
        return x._host() if x._s.host_stale else x._a
    return x


def dev_of(x: Any) -> Device:
    """``x``'s device (the host for numpy input)."""
    return x._device if isinstance(x, HostPtrArray) else HOST


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
