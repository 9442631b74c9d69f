"""hostarray: numpy arrays that OpenCL kernels use without copies.

A :class:`HostPtrArray` lives in page-aligned host memory, implements the
Python array API standard and numpy's protocols, and can be handed to
OpenCL kernels zero-copy.  hostarray tracks which side last wrote the data
and moves it only when the other side looks.
"""

from __future__ import annotations

from . import hostptr
from ._api.creation import asarray, empty, zeros
from ._array import HostPtrArray
from ._devices import Device, default_device, device, devices
from ._dtypes import (
    bool,
    complex64,
    complex128,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ._interop import from_dlpack
from ._stats import Stats, reset_stats, stats

__version__ = "0.1.0"
__array_api_version__ = "2025.12"


def __getattr__(name: str):  # kernels import pyopencl: load them on first use
    if name in ("Program", "Kernel", "Launch", "read", "write", "readwrite"):
        from . import kernels
        return getattr(kernels, name)
    raise AttributeError(f"module 'hostarray' has no attribute {name!r}")


__all__ = ["HostPtrArray", "Device", "Stats", "Program", "Kernel", "Launch", "read", "write",
           "readwrite", "asarray", "empty", "zeros", "device", "devices", "default_device",
           "stats", "reset_stats", "hostptr", "bool", "int8", "int16", "int32", "int64", "uint8",
           "uint16", "uint32", "uint64", "float32", "float64", "complex64", "complex128",
           "from_dlpack"]
