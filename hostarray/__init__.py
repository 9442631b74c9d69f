"""hostarray: numpy arrays that OpenCL kernels use without copies.

A :class:`HostPtrArray` lives in page-aligned host memory, implements the
Python array API standard and numpy's protocols, and can be handed to
OpenCL kernels zero-copy.  hostarray tracks which side last wrote the data
and moves it only when the other side looks.
"""

from __future__ import annotations

import math as _math
import sys as _sys
from typing import TYPE_CHECKING

# The namespace: every name imported explicitly (no loops over modules), so that a type
# checker knows each one; the standard's functions come one module per section of the
# specification.
from . import errors, hostptr
from ._api.creation import (
    arange,
    asarray,
    empty,
    empty_like,
    eye,
    from_dlpack,
    full,
    full_like,
    linspace,
    meshgrid,
    ones,
    ones_like,
    tril,
    triu,
    zeros,
    zeros_like,
)
from ._api.data_types import (
    astype,
    can_cast,
    finfo,
    finfo_object,  # noqa: F401 - an attribute, not in __all__
    iinfo,
    iinfo_object,  # noqa: F401 - an attribute, not in __all__
    isdtype,
    result_type,
)
from ._api.elementwise import (
    abs,
    acos,
    acosh,
    add,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitwise_and,
    bitwise_invert,
    bitwise_left_shift,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    ceil,
    clip,
    conj,
    copysign,
    cos,
    cosh,
    divide,
    equal,
    exp,
    expm1,
    floor,
    floor_divide,
    greater,
    greater_equal,
    hypot,
    imag,
    isfinite,
    isinf,
    isnan,
    less,
    less_equal,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    multiply,
    negative,
    nextafter,
    not_equal,
    positive,
    pow,
    real,
    reciprocal,
    remainder,
    round,
    sign,
    signbit,
    sin,
    sinh,
    sqrt,
    square,
    subtract,
    tan,
    tanh,
    trunc,
)
from ._api.indexing import (
    take,
    take_along_axis,
)
from ._api.linalg_main import (
    matmul,
    matrix_transpose,
    tensordot,
    vecdot,
)
from ._api.manipulation import (
    broadcast_arrays,
    broadcast_shapes,
    broadcast_to,
    concat,
    expand_dims,
    flip,
    moveaxis,
    permute_dims,
    repeat,
    reshape,
    roll,
    squeeze,
    stack,
    tile,
    unstack,
)
from ._api.searching import (
    argmax,
    argmin,
    count_nonzero,
    nonzero,
    searchsorted,
    where,
)
from ._api.sets import (
    UniqueAllResult,  # noqa: F401 - an attribute, not in __all__
    UniqueCountsResult,  # noqa: F401 - an attribute, not in __all__
    UniqueInverseResult,  # noqa: F401 - an attribute, not in __all__
    isin,
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
)
from ._api.sorting import (
    argsort,
    sort,
)
from ._api.statistical import (
    cumulative_prod,
    cumulative_sum,
    max,
    mean,
    min,
    prod,
    std,
    sum,
    var,
)
from ._api.utility import (
    all,
    any,
    diff,
)
from ._array import HostPtrArray
from ._compute.pool import clear_pool
from ._config import show_config
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
from ._guard import set_transfer_guard, transfer_guard
from ._methods import ArrayMethods as _ArrayMethods  # noqa: F401 - the array's computing half
from ._placement import device_compute_threshold, set_device_compute_threshold
from ._stats import Stats, reset_stats, stats
from ._version import __version__ as __version__  # one place (pyproject.toml keeps the same)

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

if TYPE_CHECKING:
    from .kernels import Kernel, Launch, Program, read, readwrite, write
else:
    def __getattr__(name: str) -> object:  # kernels import pyopencl: load them on first use
        if name in ("Program", "Kernel", "Launch", "read", "write", "readwrite"):
            try:
                from . import kernels
            except ImportError as e:  # pyopencl does not import: a use says why, and the fix
                return _without_opencl(name, e)
            return getattr(kernels, name)
        raise AttributeError(f"module 'hostarray' has no attribute {name!r}")

    def _without_opencl(name: str, error: ImportError) -> type:
        """A stand-in for the kernel API's ``name`` where pyopencl does not import: a class
        (``isinstance`` answers ``False``) whose call raises :class:`DeviceUnavailable`
        naming the import problem and its fix, as ``ha.device("opencl")`` does."""
        from .backends._pyopencl import describe, record_import_error
        from .errors import DeviceUnavailable

        record_import_error(error)
        why = describe(error)

        def refuse(cls: type, *args: object, **kwargs: object) -> None:
            raise DeviceUnavailable("opencl", f"hostarray.{name} needs OpenCL, but {why}")

        return type(name, (), {"__new__": refuse, "__doc__": f"Unavailable: {why}.",
                               "__module__": __name__})

    def __dir__() -> list[str]:  # tab completion shows the lazily loaded kernel API too
        return sorted(set(globals()) | {"Program", "Kernel", "Launch", "read", "write",
                                        "readwrite"})


# the namespace, written once (tests/array/test_typing.py checks that a type checker sees it)
__all__ = [
    "HostPtrArray", "Device", "Stats", "Program", "Kernel", "Launch", "read", "write",
    "readwrite", "asarray", "empty", "zeros", "device", "devices", "default_device", "stats",
    "reset_stats", "transfer_guard", "set_transfer_guard", "device_compute_threshold",
    "set_device_compute_threshold", "clear_pool", "show_config", "errors", "hostptr", "bool",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
    "float64", "complex64", "complex128", "from_dlpack",
    "__array_api_version__", "__array_namespace_info__", "e", "inf", "nan", "pi", "newaxis",
    "fft", "linalg", "arange", "empty_like", "eye", "full", "full_like", "linspace",
    "meshgrid", "ones", "ones_like", "tril", "triu", "zeros_like", "astype", "can_cast",
    "finfo", "iinfo", "isdtype", "result_type", "abs", "acos", "acosh", "add", "asin", "asinh",
    "atan", "atan2", "atanh", "bitwise_and", "bitwise_left_shift", "bitwise_invert",
    "bitwise_or", "bitwise_right_shift", "bitwise_xor", "ceil", "clip", "conj", "copysign",
    "cos", "cosh", "divide", "equal", "exp", "expm1", "floor", "floor_divide", "greater",
    "greater_equal", "hypot", "imag", "isfinite", "isinf", "isnan", "less", "less_equal",
    "log", "log1p", "log2", "log10", "logaddexp", "logical_and", "logical_not", "logical_or",
    "logical_xor", "maximum", "minimum", "multiply", "negative", "nextafter", "not_equal",
    "positive", "pow", "real", "reciprocal", "remainder", "round", "sign", "signbit", "sin",
    "sinh", "square", "sqrt", "subtract", "tan", "tanh", "trunc", "take", "take_along_axis",
    "matmul", "matrix_transpose", "tensordot", "vecdot", "broadcast_arrays",
    "broadcast_shapes", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis",
    "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack",
    "argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where", "isin",
    "unique_all", "unique_counts", "unique_inverse", "unique_values", "argsort", "sort",
    "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var",
    "all", "any", "diff",
]

# the reference's Parameters / Returns sections, written once for the namespace (the
# element-wise functions' from their table) in hostarray/_docstrings.py
from . import _docstrings  # noqa: E402

_docstrings.complete_namespace(_sys.modules[__name__])
