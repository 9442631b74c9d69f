"""hostarray: numpy arrays that OpenCL kernels use without copies.

A :class:`HostPtrArray` lives in page-aligned host memory, implements the
Python array API standard and numpy's protocols, and can be handed to
OpenCL kernels zero-copy.  hostarray tracks which side last wrote the data
and moves it only when the other side looks.
"""

from __future__ import annotations

import math as _math

from . import errors, hostptr
from ._api import creation as _creation_module
from ._api import data_types as _data_types_module
from ._api import elementwise as _elementwise_module
from ._api import indexing as _indexing_module
from ._api import linalg_main as _linalg_main_module
from ._api import manipulation as _manipulation_module
from ._api import searching as _searching_module
from ._api import sets as _sets_module
from ._api import sorting as _sorting_module
from ._api import statistical as _statistical_module
from ._api import utility as _utility_module
from ._api.creation import asarray, empty, zeros
from ._array import HostPtrArray
from ._dask import install as _install_dask
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

# the standard's functions, one module per section of the specification
for _m in (_creation_module, _data_types_module, _elementwise_module, _indexing_module,
           _linalg_main_module, _manipulation_module, _searching_module, _sets_module,
           _sorting_module, _statistical_module, _utility_module):
    for _n in _m.__all__:
        globals().setdefault(_n, getattr(_m, _n))
del _m, _n

__version__ = "0.1.0"
__array_api_version__ = "2025.12"

_install_dask()  # registers HostPtrArray with dask.array once that is imported

# constants of the standard
e = _math.e
inf = _math.inf
nan = _math.nan
pi = _math.pi
newaxis = None

from . import fft, linalg  # noqa: E402 - the extensions build on the namespace above
from ._info import __array_namespace_info__  # noqa: E402


def __getattr__(name: str):  # kernels import pyopencl: load them on first use
    if name in ("Program", "Kernel", "Launch", "read", "write", "readwrite"):
        from . import kernels
        return getattr(kernels, name)
    raise AttributeError(f"module 'hostarray' has no attribute {name!r}")


__all__ = ["HostPtrArray", "Device", "Stats", "Program", "Kernel", "Launch", "read", "write",
           "readwrite", "asarray", "empty", "zeros", "device", "devices", "default_device",
           "stats", "reset_stats", "errors", "hostptr",
           "bool", "int8", "int16", "int32", "int64", "uint8",
           "uint16", "uint32", "uint64", "float32", "float64", "complex64", "complex128",
           "from_dlpack"]
__all__ += ["__array_api_version__", "__array_namespace_info__", "e", "inf", "nan", "pi",
            "newaxis", "fft", "linalg"]
for _m in (_creation_module, _data_types_module, _elementwise_module, _indexing_module,
           _linalg_main_module, _manipulation_module, _searching_module, _sets_module,
           _sorting_module, _statistical_module, _utility_module):
    __all__ += [_n for _n in _m.__all__ if _n not in __all__ and not _n[0].isupper()
                and not _n.endswith("_object")]
del _m
