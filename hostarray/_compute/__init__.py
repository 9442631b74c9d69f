"""The device path: operations computed on an OpenCL device by kernels hostarray generates.

:mod:`hostarray._placement` decides where an operation runs (the placement rule, and
the one entry every namespace function with a device path asks); the modules here
compute what it sends them, with generated kernels, and return ``None`` where they
can't (a data type or a layout the device path does not take).  The result is a
HostPtrArray on the device whose newest data is on the device: the host acquires it
only when it looks.  ``ha.stats()`` counts ``device_ops`` (operations run on the device)
and ``host_fallbacks`` (operations placement sent to the device that came back).

* :mod:`~hostarray._compute.elementwise`: the element-wise functions and operators;
* :mod:`~hostarray._compute.reductions`: reductions and cumulative functions;
* :mod:`~hostarray._compute.matmul`: ``matmul`` and ``tensordot``;
* :mod:`~hostarray._compute.misc`: conversions, copies, ``where``, ``clip``, fills and
  writes into views;
* :mod:`~hostarray._compute.pool` and :mod:`~hostarray._compute.launch`: the result pool
  and the launch machinery under them.

The submodules import pyopencl, which a host-only program never loads: they are
loaded on first use (``_compute.elementwise`` ..., through this module's
``__getattr__``).  This module holds what they and placement share without pyopencl:
:data:`PUBLISH_LIMIT`, and :data:`DEVICE_FUNCTIONS`, the record of which namespace
functions the device path computes: each module adds its names when it is imported
(:func:`register`);
:func:`device_functions` imports them all and returns the record (the documentation's
coverage table is generated from it).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from types import ModuleType

__all__ = ["DEVICE_FUNCTIONS", "PUBLISH_LIMIT", "device_functions", "register"]

#: host-newest operands up to this many bytes are published for a device operation
PUBLISH_LIMIT = 1 << 20

#: namespace function name -> a short note on what of it stays on the host ("" if
#: nothing); filled by the modules of this package at import (see :func:`register`)
DEVICE_FUNCTIONS: dict[str, str] = {}

def register(names: Iterable[str], note: str = "") -> None:
    """Record that the device path computes the namespace functions ``names`` (spelt as
    the namespace spells them: ``"add"``, ``"sum"``, ``"linalg.vector_norm"``; the array's
    operators follow their function); ``note`` says briefly what of them stays on the host
    (e.g. ``"float16, complex on host"``; ``""``: nothing).

    Each module of :mod:`hostarray._compute` calls this at import for what it handles,
    so that :func:`device_functions` (and the documentation) follows the code."""
    for name in names:
        DEVICE_FUNCTIONS[name] = note


def device_functions() -> dict[str, str]:
    """Every namespace function the device path computes, with its note (see
    :func:`register`): imports every module of :mod:`hostarray._compute` (and so
    pyopencl) first, so that each has registered its names."""
    for m in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{m.name}")
    return dict(DEVICE_FUNCTIONS)


_SUBMODULES = frozenset(("elementwise", "launch", "matmul", "misc", "pool", "reductions"))


def __getattr__(name: str) -> ModuleType:
    """``_compute.elementwise`` and the other submodules, imported on first use (then they
    are attributes of this package, found in one lookup)."""
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
