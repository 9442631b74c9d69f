"""Dask support: ``HostPtrArray`` as a chunk type of ``dask.array``.

Dask defers to array types it does not know in arithmetic and numpy calls;
registering ``HostPtrArray`` as a chunk type makes ``dask_array + x`` and
``np.add(dask_array, x)`` work.  Everything else (``da.from_array(x)``,
elementwise operations, reductions, ``map_blocks``) works through
``HostPtrArray``'s numpy protocols, and pickling carries chunks between
``dask.distributed`` worker processes with the device recorded by name.

:func:`install` runs at ``import hostarray``: it registers at once if
``dask.array`` is already imported, otherwise right after it is imported
(a one-shot import hook), so that nothing imports Dask that would not
otherwise.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from types import ModuleType
from typing import Any

__all__ = ["register", "install"]

_LOCK = threading.Lock()
_DONE = False


def register() -> None:
    """Register ``HostPtrArray`` with ``dask.array`` (idempotent).

    Examples
    --------
    >>> import dask.array as da, numpy as np, hostarray as ha
    >>> from hostarray._dask import register
    >>> register()
    >>> d = da.from_array(ha.asarray(np.arange(6.0)), chunks=3)
    >>> type(d.compute()).__name__
    'HostPtrArray'
    """
    global _DONE
    with _LOCK:
        if _DONE:
            return
        import dask.array as da
        from dask.array.dispatch import percentile_lookup

        from ._array import HostPtrArray

        da.register_chunk_type(HostPtrArray)
        percentile_lookup.register(HostPtrArray, _percentile)
        _DONE = True


def _percentile(a: Any, q: Any, method: str = "linear") -> Any:
    # Dask's numpy implementation, run on the host view; the result is plain numpy
    # (percentiles are merged by Dask as numpy arrays).
    import numpy as np
    from dask.array.dispatch import percentile_lookup

    return percentile_lookup.dispatch(np.ndarray)(a._host(), q, method)


class _RegisterAfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``dask.array`` through the other finders and registers after it executes."""

    def __init__(self) -> None:
        self._loader: Any = None

    def find_spec(self, fullname: str, path: Any = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != "dask.array" or self._loader is not None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        self._loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        try:
            self._loader.exec_module(module)
        finally:
            module.__loader__ = self._loader
            if module.__spec__ is not None:
                module.__spec__.loader = self._loader
            _uninstall(self)
        register()


def _uninstall(hook: _RegisterAfterImport) -> None:
    try:
        sys.meta_path.remove(hook)
    except ValueError:
        pass


def install() -> None:
    """Register now if ``dask.array`` is loaded, else right after it is imported."""
    if "dask.array" in sys.modules:
        register()
    elif not any(isinstance(f, _RegisterAfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterImport())
