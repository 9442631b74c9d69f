"""``__array_namespace_info__()``: what this namespace supports, per the standard."""

from __future__ import annotations

from typing import Any

from . import _dtypes
from ._devices import Device
from ._devices import default_device as _default_device
from ._devices import device as _parse_device
from ._devices import devices as _devices

__all__ = ["__array_namespace_info__", "Info"]

_KIND_ORDER = ("bool", "signed integer", "unsigned integer", "integral", "real floating",
               "complex floating", "numeric")


class Info:
    """The inspection object the standard's ``__array_namespace_info__()`` returns.

    Examples
    --------
    >>> import hostarray as ha
    >>> info = ha.__array_namespace_info__()
    >>> info.capabilities()["boolean indexing"]
    True
    >>> info.default_dtypes()["indexing"]
    dtype('int64')
    """

    __slots__ = ()

    def capabilities(self) -> dict[str, Any]:
        """Optional features: boolean indexing, data-dependent shapes, max dimensions."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self) -> Device:
        """The device arrays are created on when no ``device`` is given."""
        return _default_device()

    def default_dtypes(self, *, device: Any = None) -> dict[str, Any]:
        """Default data types: ``real floating``, ``complex floating``, ``integral``,
        ``indexing`` (the same on every device)."""
        if device is not None:
            _parse_device(device)
        return {"real floating": _dtypes.DEFAULT_FLOAT,
                "complex floating": _dtypes.DEFAULT_COMPLEX,
                "integral": _dtypes.DEFAULT_INT,
                "indexing": _dtypes.DEFAULT_INDEX}

    def devices(self) -> tuple[Device, ...]:
        """The host and every working OpenCL device."""
        return _devices()

    def dtypes(self, *, device: Any = None,
               kind: str | tuple[str, ...] | None = None) -> dict[str, Any]:
        """Supported data types by name, optionally only those of ``kind``."""
        if device is not None:
            _parse_device(device)
        if kind is None:
            return {dt.name: dt for dt in _dtypes.ALL_DTYPES}
        kinds = kind if isinstance(kind, tuple) else (kind,)
        wanted: set[Any] = set()
        for k in kinds:
            if k not in _dtypes.KINDS:
                raise ValueError(f"unknown data type kind {k!r}; expected one of {_KIND_ORDER}")
            wanted |= _dtypes.KINDS[k]
        return {dt.name: dt for dt in _dtypes.ALL_DTYPES if dt in wanted}


_INFO = Info()


def __array_namespace_info__() -> Info:
    """The namespace's inspection object (capabilities, devices, data types).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.__array_namespace_info__().devices()[0]
    Device('cpu')
    """
    return _INFO
