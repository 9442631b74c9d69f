"""``__array_namespace_info__()``: what this namespace supports, per the standard."""

from __future__ import annotations

from typing import Any

from . import _dtypes
from ._devices import Device
from ._devices import default_device as _default_device
from ._devices import device as _parse_device
from ._devices import devices as _devices

__all__ = ["__array_namespace_info__", "Info", "supports_float64"]

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
        """The device arrays are created on when no ``device`` is given: that of the
        innermost ``with ha.default_device(...):`` block of this thread, else
        ``HOSTARRAY_DEVICE``'s, else the host (see :func:`hostarray.default_device`)."""
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
        """Supported data types by name on ``device`` (the default device if ``None``),
        optionally only those of ``kind``.

        ``float64`` and ``complex128`` are listed for the host and for OpenCL devices that
        support double precision (``CL_DEVICE_DOUBLE_FP_CONFIG`` not 0), not for others:
        there, kernels can't use ``double``, although the namespace (which computes on
        the host) still makes and computes float64 arrays attached to such a device.
        """
        dev = _default_device() if device is None else _parse_device(device)
        supported = _dtypes.ALL_DTYPES if supports_float64(dev) else _NO_FLOAT64
        if kind is None:
            return {dt.name: dt for dt in supported}
        kinds = kind if isinstance(kind, tuple) else (kind,)
        wanted: set[Any] = set()
        for k in kinds:
            if k not in _dtypes.KINDS:
                raise ValueError(f"unknown data type kind {k!r}; expected one of {_KIND_ORDER}")
            wanted |= _dtypes.KINDS[k]
        return {dt.name: dt for dt in supported if dt in wanted}


_NO_FLOAT64 = tuple(dt for dt in _dtypes.ALL_DTYPES
                    if dt not in (_dtypes.float64, _dtypes.complex128))
_FP64: dict[str, bool] = {}  # device name -> whether it supports double precision


def supports_float64(device: Any) -> bool:
    """Whether kernels on ``device`` can compute in double precision: always on the host;
    on an OpenCL device when ``CL_DEVICE_DOUBLE_FP_CONFIG`` is not 0 (read once per
    device).

    Examples
    --------
    >>> import hostarray as ha
    >>> from hostarray._info import supports_float64
    >>> supports_float64(ha.device("cpu"))
    True
    """
    dev = _parse_device(device)
    if dev.framework == "host":
        return True
    key = str(dev)
    known = _FP64.get(key)
    if known is None:
        cl_dev = getattr(dev, "_cl_device", None)
        try:
            known = int(getattr(cl_dev, "double_fp_config", 0) or 0) != 0
        except Exception:  # a driver that can't answer: no double precision claimed
            known = False
        _FP64[key] = known
    return known


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
