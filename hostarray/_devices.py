"""Devices: the host and every working OpenCL device, named by strings.

``"cpu"`` is the host; ``"opencl:P:D"`` is device ``D`` of OpenCL platform
``P``; ``"opencl"`` is the first working OpenCL device.  OpenCL is
discovered lazily, on the first question that needs it.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any

from ._storage import PAGE_SIZE
from .errors import DeviceUnavailable, InvalidDevice, Refusal, Refused, UnknownFramework

__all__ = ["Device", "HOST", "device", "devices", "default_device", "left_out_devices"]

KNOWN_FRAMEWORKS = ("host", "cpu", "opencl")


class Device:
    """A place arrays can live: the host (``"cpu"``) or an OpenCL device.

    Attributes
    ----------
    framework : str
        ``"host"`` or ``"opencl"``.
    name : str
        The driver's name of the device.
    type : str
        ``"host"``, or the OpenCL device type (``"CPU"``, ``"GPU"``, ...).
    alignment : int
        Alignment in bytes of sub-buffer origins: where a view passed to a kernel may
        start inside its array's buffer (``CL_DEVICE_MEM_BASE_ADDR_ALIGN`` / 8).
    host_alignment : int
        Alignment in bytes that host memory needs for a buffer to use it in place
        (zero-copy), found once per device by a probe; an array's memory needs at least
        its element size too (see :func:`hostarray.hostptr.attach`).
    max_alloc : int
        Largest single allocation in bytes.
    host_unified : bool
        Whether the device reports memory unified with the host.

    Examples
    --------
    >>> import hostarray as ha
    >>> d = ha.device("cpu")
    >>> str(d), d.framework
    ('cpu', 'host')
    >>> ha.device(str(d)) == d
    True
    """

    __slots__ = ("framework", "name", "type", "alignment", "max_alloc", "host_unified",
                 "_key", "_runtime", "_cl_device")

    def __init__(self, framework: str, key: str, name: str, type: str, alignment: int,
                 max_alloc: int, host_unified: bool, cl_device: Any = None) -> None:
        self.framework = framework
        self._key = key
        self.name = name
        self.type = type
        self.alignment = alignment
        self.max_alloc = max_alloc
        self.host_unified = host_unified
        self._cl_device = cl_device
        self._runtime: Any = None

    @property
    def runtime(self) -> Any:
        """The backend's per-device runtime (context, queue), created on first use."""
        if self._runtime is None:
            if self.framework != "opencl":
                # the one error for the host where an OpenCL device is needed (as attach)
                raise Refused(self, Refusal("device_type", device_type=self.type))
            with _LOCK:
                if self._runtime is None:
                    from .backends.opencl import DeviceRuntime
                    self._runtime = DeviceRuntime(self._cl_device, self._key)
        return self._runtime

    @property
    def host_alignment(self) -> int:
        """Alignment (bytes) host memory needs for a buffer on this device to use it in
        place: probed once per device (an off-alignment ``CL_MEM_USE_HOST_PTR`` buffer is
        made, a kernel writes it, a map must return the host pointer with the writes in
        the host bytes); ``1`` on the copied link and for the host.  Not
        ``CL_DEVICE_MEM_BASE_ADDR_ALIGN`` (that is :attr:`alignment`, for sub-buffers).
        An array's memory also needs its element size: see
        :func:`hostarray._sharing.host_requirement`."""
        return 1 if self.framework == "host" else self.runtime.host_alignment

    @property
    def link(self) -> str | None:
        """Host-link kind of new buffers on this device (``None`` for the host)."""
        return None if self.framework == "host" else self.runtime.link

    def __str__(self) -> str:
        return self._key

    def __repr__(self) -> str:
        if self.framework == "host":
            return "Device('cpu')"
        return f"Device({self._key!r}, name={self.name!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Device):
            return self._key == other._key
        if isinstance(other, str):
            return self._key == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled by name; the receiving process looks the device up again.
        return (device, (self._key,))


HOST = Device("host", "cpu", "host CPU", "host", PAGE_SIZE, 2**63 - 1, True)

_LOCK = threading.RLock()
_OPENCL: list[Device] | None = None
_LEFT_OUT: list[tuple[str, str, str]] = []


def _opencl_devices() -> list[Device]:
    global _OPENCL
    if _OPENCL is None:
        with _LOCK:
            if _OPENCL is None:
                try:
                    from .backends import opencl
                except ImportError as e:  # pyopencl missing: only the host
                    _LEFT_OUT.append(("opencl", "(pyopencl)", f"cannot import: {e}"))
                    _OPENCL = []
                    return _OPENCL
                working, left_out = opencl.discover()
                _LEFT_OUT.extend(left_out)
                found = []
                for p, d, dev in working:
                    found.append(Device(
                        "opencl", f"opencl:{p}:{d}", dev.name.strip(),
                        _type_name(dev.type), max(1, dev.mem_base_addr_align // 8),
                        int(dev.max_mem_alloc_size), bool(dev.host_unified_memory), dev))
                _OPENCL = found
    return _OPENCL


def _type_name(bits: int) -> str:
    """The device's kind (``"CPU"``, ``"GPU"``, ...): PoCL also sets the ``ALL`` mask bits."""
    import pyopencl as cl

    names = [n for n in ("GPU", "CPU", "ACCELERATOR", "CUSTOM")
             if bits & getattr(cl.device_type, n)]
    return " | ".join(names) or cl.device_type.to_string(bits)  # type: ignore[operator]


def devices() -> tuple[Device, ...]:
    """The host first, then every working OpenCL device.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.devices()[0]
    Device('cpu')
    """
    return (HOST, *_opencl_devices())


def left_out_devices() -> list[tuple[str, str, str]]:
    """``(spec, name, why)`` for devices that list themselves but do not work."""
    _opencl_devices()
    return list(_LEFT_OUT)


_SPEC = re.compile(r"^\s*([A-Za-z_][\w-]*)\s*(?::\s*(\d+)\s*)?(?::\s*(\d+)\s*)?$")


def device(spec: Device | str | None) -> Device:
    """The device named by ``spec`` (a :class:`Device`, ``"cpu"``, ``"opencl"``,
    ``"opencl:P:D"``); ``None`` gives the default device.

    Raises
    ------
    UnknownFramework
        ``spec`` names a framework hostarray has no backend for (``"cuda:0"``).
    InvalidDevice
        ``spec`` does not parse, or names no device found here.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.device("cpu") is ha.device(None) or ha.device(None).framework == "opencl"
    True
    """
    if spec is None:
        return default_device()
    if isinstance(spec, Device):
        return spec
    if not isinstance(spec, str):
        raise InvalidDevice(spec, f"expected a Device or a string, got {type(spec).__name__}")
    m = _SPEC.match(spec)
    if not m:
        raise InvalidDevice(spec, "expected 'cpu', 'opencl' or 'opencl:P:D'")
    fw, p, d = m.group(1).lower(), m.group(2), m.group(3)
    if fw not in KNOWN_FRAMEWORKS:
        raise UnknownFramework(fw)
    if fw in ("cpu", "host"):
        if p is not None:
            raise InvalidDevice(spec, "the host takes no index")
        return HOST
    found = _opencl_devices()
    if p is None:
        if not found:
            raise InvalidDevice(spec, "no working OpenCL device was found")
        return found[0]
    key = f"opencl:{int(p)}:{int(d) if d is not None else 0}"
    for dev in found:
        if dev._key == key:
            return dev
    for s, name, why in _LEFT_OUT:
        if s == key:
            raise DeviceUnavailable(f"{key} ({name})", why)
    raise InvalidDevice(spec, f"no OpenCL device {key}; found {[str(d) for d in found]}")


_DEFAULT: list[Device] = []


def default_device() -> Device:
    """The device ``HOSTARRAY_DEVICE`` names, the host otherwise.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.default_device() in ha.devices()
    True
    """
    if not _DEFAULT:
        spec = os.environ.get("HOSTARRAY_DEVICE", "").strip()
        _DEFAULT.append(device(spec) if spec else HOST)
    return _DEFAULT[0]
