"""Shared by the device compute tests (``tests/test_device_*.py``): the real data types and
their OpenCL C names (``bool`` is stored as ``uchar``)."""

from __future__ import annotations

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


def device_newest(a: np.ndarray, dev: Any) -> Any:
    """``a`` on ``dev``, its newest bytes written there by a kernel (a read-write pointer:
    off a shared link the host's copy is stale afterwards)."""
    import hostarray as ha

    x = ha.asarray(a, device=dev, copy=True)  # a C-ordered copy nobody else holds
    t = C_TYPES[x.dtype.name]
    prg = _TOUCH.get((dev, t))
    if prg is None:
        head = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if t == "double" else ""
        prg = _TOUCH[dev, t] = ha.Program(
            head + f"__kernel void k(__global {t} *x) {{ size_t i = get_global_id(0); "
                   "x[i] = x[i]; }", device=dev)
    if x.size:
        prg.k(x.size, x)
    assert not on_device(dev) or not x.size or x._s.host_stale
    return x
