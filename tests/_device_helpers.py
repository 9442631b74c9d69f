"""Shared by the device compute tests (``tests/device_compute/``): the real data types and
their OpenCL C names (``bool`` is stored as ``uchar``)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
          np.uint64, np.float32, np.float64]
C_TYPES = {"bool": "uchar", "int8": "char", "uint8": "uchar", "int16": "short",
           "uint16": "ushort", "int32": "int", "uint32": "uint", "int64": "long",
           "uint64": "ulong", "float32": "float", "float64": "double"}


def on_device(dev: Any) -> bool:
    """Whether device-newest data is computed on ``dev`` (not on a shared link)."""
    return dev.link != "shared"


_TOUCH: dict[tuple[Any, str], Any] = {}
#: the local size of the tests' helper kernels, their global size rounded up to it (the
#: kernel returns past ``n``): PoCL compiles a kernel anew for each local size it is
#: launched with, and picks one per global size where none is given
GROUP = 64


def launch_over(kernel: Any, n: int, *args: Any) -> None:
    """Launch ``kernel(*args, n)`` over ``n`` work-items, in groups of :data:`GROUP`."""
    kernel(-(-n // GROUP) * GROUP, *args, n, local_size=GROUP)


def device_newest(a: np.ndarray, dev: Any) -> Any:
    """``a`` on ``dev``, its newest bytes written there by a kernel (a read-write pointer:
    off a shared link the host's copy is stale afterwards)."""
    import hostarray as ha
    from hostarray._introspect import state

    x = ha.asarray(a, device=dev, copy=True)  # a C-ordered copy nobody else holds
    t = C_TYPES[x.dtype.name]
    prg = _TOUCH.get((dev, t))
    if prg is None:
        head = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if t == "double" else ""
        prg = _TOUCH[dev, t] = ha.Program(
            head + f"__kernel void k(__global {t} *x, const ulong n) {{ "
                   "size_t i = get_global_id(0); if (i < n) x[i] = x[i]; }", device=dev)
    if x.size:
        launch_over(prg.k, x.size, x)
    assert not on_device(dev) or not x.size or state(x).host_stale
    return x


def newest_on(dev: Any, values: Any, dtype: str) -> Any:
    """``values`` as ``dtype`` on ``dev``, its newest data there (a do-nothing kernel wrote
    it)."""
    import hostarray as ha

    a = np.asarray(values, dtype=dtype)
    x = ha.asarray(a, device=dev, copy=True)
    prg = ha.Program(f"__kernel void k(__global {C_TYPES[dtype]} *x, const ulong n){{ }}",
                     device=dev)
    launch_over(prg.k, x.size, x)
    return x


def host_path(fn: Callable[[], Any]) -> Any:
    """``fn()`` with the device path off: the host path's (numpy's) answer."""
    import hostarray as ha

    old = ha.set_device_compute_threshold(None)
    try:
        return fn()
    finally:
        ha.set_device_compute_threshold(old)


_TOUCH_F32 = "__kernel void touch(__global float *x) { int i = get_global_id(0); x[i] = x[i]; }"


def f32_newest(dev: Any, a: Any) -> Any:
    """``a`` as float32 on ``dev``, its newest data there (a read-write kernel touched it)."""
    import hostarray as ha

    x = ha.asarray(np.array(a, dtype=np.float32), device=dev, copy=True)
    ha.Program(_TOUCH_F32, device=dev).touch((x.size,), x)
    return x


def f32_host(f: Callable[[np.ndarray], Any], a: Any) -> Any:
    """``f`` of ``a`` as float32 in numpy, its warnings silenced: the host path's answer."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return f(np.array(a, dtype=np.float32))
