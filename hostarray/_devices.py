"""Devices: the host and every working OpenCL device, named by strings; the default device.

``"cpu"`` is the host; ``"opencl:P:D"`` is device ``D`` of OpenCL platform
``P``; ``"opencl"`` is the first working OpenCL device; ``"opencl:gpu:N"``
(``cpu``, ``accelerator``, ``custom``) is the ``N``-th working OpenCL device of
that type, ``"gpu"`` the first GPU.  OpenCL is discovered lazily, on the first
question that needs it.  The default device is that of the innermost
``with ha.default_device(...)`` block of the thread, else ``HOSTARRAY_DEVICE``'s,
else the host.
"""

from __future__ import annotations

import re
import threading
from contextvars import ContextVar
from types import TracebackType
from typing import Any

from . import _settings
from ._storage import PAGE_SIZE
from .errors import DeviceUnavailable, InvalidDevice, Refusal, Refused, UnknownFramework

__all__ = ["Device", "HOST", "device", "devices", "default_device", "left_out_devices",
           "aliases"]


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
    link : str or None
        The host-link kind of new buffers on the device: ``"shared"`` (the device works
        on the host bytes), ``"mapped"`` (the driver mirrors them; each publish and
        acquire is a map), ``"copied"`` (each is a copy; ``HOSTARRAY_LINK=copied``
        forces it); found by a probe kernel on first use.  ``None`` for the host.
    runtime : object
        The OpenCL backend's per-device state (context, in-order queue, program
        cache), created on first use; internal (use :func:`hostarray.hostptr.queue`
        for the queue).  The host has none: reading it raises
        :class:`~hostarray.errors.Refused`.

    Notes
    -----
    A device is a context manager: ``with dev:`` makes it the default device of the
    block in this thread, as ``with ha.default_device(dev):`` does (see
    :func:`default_device`).

    Examples
    --------
    >>> import hostarray as ha
    >>> d = ha.device("cpu")
    >>> str(d), d.framework
    ('cpu', 'host')
    >>> ha.device(str(d)) == d
    True
    >>> with d:
    ...     ha.default_device() is d
    True
    """

    __slots__ = ("framework", "name", "type", "alignment", "max_alloc", "host_unified",
                 "_key", "_runtime", "_cl_device")
    # inside an error a device pickles as its name alone (hostarray.errors, which does not
    # import this module, looks for this)
    _pickled_by_name_in_errors = True

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

    def __enter__(self) -> Device:
        """Make this the default device until the block ends (see :func:`default_device`)."""
        _enter(self)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        """End the block: the default device is again what it was before it."""
        _exit(self)


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
                except ImportError as e:  # pyopencl missing or broken: only the host
                    from .backends._pyopencl import record_import_error

                    record_import_error(e)  # ha.device("opencl") and the CLI say it, and the fix
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
    """``(spec, name, why)`` for devices that list themselves but do not work (and, with
    the spec ``"opencl"``, why there is no OpenCL at all: pyopencl does not import, or no
    driver is installed)."""
    _opencl_devices()
    return list(_LEFT_OUT)


INSTALL_DRIVER = ("install an OpenCL driver: on Debian or Ubuntu `apt-get install "
                  "pocl-opencl-icd` (a CPU device), or your GPU vendor's OpenCL driver")


def why_no_opencl() -> str:
    """Why no OpenCL device works here, and the fix: pyopencl does not import, no driver is
    installed, the drivers list no device, or every device they list failed its probe
    kernel.  (For the errors of calls that need an OpenCL device and found none.)

    Examples
    --------
    >>> from hostarray._devices import why_no_opencl
    >>> isinstance(why_no_opencl(), str)
    True
    """
    from .backends._pyopencl import import_problem

    _opencl_devices()
    problem = import_problem()
    if problem is not None:
        return problem
    none = [why for s, _, why in _LEFT_OUT if s == "opencl"]
    if none:
        return f"no OpenCL driver is installed ({none[0]}); {INSTALL_DRIVER}"
    failed = [f"{s} ({name}): {why}" for s, name, why in _LEFT_OUT if s.startswith("opencl:")]
    if failed:
        return (f"every device the OpenCL drivers list failed a probe kernel ({'; '.join(failed)}"
                f"); `hostarray devices` shows them; or {INSTALL_DRIVER}")
    return f"the OpenCL drivers here list no device; {INSTALL_DRIVER}"


# -- names ------------------------------------------------------------------------------------

# "opencl:KIND:N" is the N-th working OpenCL device of that type (counted from 0 over every
# platform, in the order devices() lists them); "opencl:KIND" is the first.  "gpu[:N]" and
# "accelerator[:N]" are short for "opencl:gpu[:N]" and "opencl:accelerator[:N]" ("cpu" stays
# the host).
KINDS = {"cpu": "CPU", "gpu": "GPU", "accelerator": "ACCELERATOR", "custom": "CUSTOM"}
_BARE_KINDS = ("gpu", "accelerator")
_LABELS = {"cpu": "CPU", "gpu": "GPU", "accelerator": "accelerator", "custom": "custom device"}
_WORD = re.compile(r"[a-z_][\w-]*", re.ASCII)
_INDEX = re.compile(r"[0-9]+", re.ASCII)
_EXPECTED = ("expected 'cpu', 'opencl', 'opencl:P:D', 'gpu', 'accelerator', 'opencl:KIND' or "
             "'opencl:KIND:N' with KIND one of cpu, gpu, accelerator, custom")


def _kinds(dev: Device) -> list[str]:
    """The kinds (``"cpu"``, ``"gpu"``, ...) of OpenCL device ``dev``: its reported types."""
    types = dev.type.split(" | ")
    return [k for k, t in KINDS.items() if t in types]


def _of_kind(kind: str) -> list[Device]:
    return [d for d in _opencl_devices() if kind in _kinds(d)]


def aliases(dev: Device) -> list[str]:
    """The other names :func:`device` takes for ``dev``: its kind selectors
    (``"opencl:gpu:1"``; for the first of its kind also ``"opencl:gpu"``, and ``"gpu"`` for
    a GPU or an accelerator), and ``"opencl"`` for the first OpenCL device; ``["host"]`` for
    the host.

    Examples
    --------
    >>> import hostarray as ha
    >>> from hostarray._devices import aliases
    >>> aliases(ha.device("cpu"))
    ['host']
    >>> all(ha.device(name) == d for d in ha.devices() for name in aliases(d))
    True
    """
    if dev.framework == "host":
        return ["host"]
    names = []
    for kind in _kinds(dev):
        i = next(i for i, d in enumerate(_of_kind(kind)) if d is dev)
        names.append(f"opencl:{kind}:{i}")
        if i == 0:
            names.append(f"opencl:{kind}")
            if kind in _BARE_KINDS:
                names.append(kind)
    found = _opencl_devices()
    if found and found[0] is dev:
        names.append("opencl")
    return names


def _what_is_here() -> str:
    """What a selector that names no device says after why: the devices, and the kinds."""
    found = _opencl_devices()
    listed = ", ".join(["cpu", *(f"{d} ({d.type}, {d.name})" for d in found)])
    kinds = [f"'opencl:{k}'" for k in KINDS if _of_kind(k)]
    text = (f"the devices are {listed}; use one of those" +
            (f" or {' or '.join(kinds)}" if kinds else ""))
    left = [f"{s} ({name})" for s, name, _ in _LEFT_OUT if s.startswith("opencl:")]
    if left:
        text += f"; left out as not working: {', '.join(left)}"
    return text


def _by_kind(spec: str, kind: str, rest: list[str]) -> Device:
    """The device of kind selector ``spec``: ``rest`` is ``[]`` or ``["N"]``."""
    if len(rest) > 1 or (rest and not _INDEX.fullmatch(rest[0])):
        raise InvalidDevice(spec, f"expected 'opencl:{kind}' or 'opencl:{kind}:N', N counted "
                                  f"from 0; {_what_is_here()}")
    n = int(rest[0]) if rest else 0
    matches = _of_kind(kind)
    if n < len(matches):
        return matches[n]
    label = _LABELS[kind]
    if matches:
        listed = ", ".join(f"opencl:{kind}:{i} = {d}" for i, d in enumerate(matches))
        are = "is" if len(matches) == 1 else "are"
        why = f"no OpenCL {label} {n}: counted from 0, there {are} {len(matches)} ({listed})"
    else:
        why = f"no OpenCL {label}"
    raise InvalidDevice(spec, f"{why}; {_what_is_here()}")


def device(spec: Device | str | None) -> Device:
    """The device named by ``spec``; ``None`` gives the default device
    (:func:`default_device`).

    ``spec`` is a :class:`Device` or one of these strings (case-insensitive):

    * ``"cpu"`` (or ``"host"``): the host;
    * ``"opencl"``: the first working OpenCL device; ``"opencl:P:D"``: device ``D`` of
      OpenCL platform ``P`` (``"opencl:P"`` is ``"opencl:P:0"``);
    * a kind: ``"opencl:gpu"``, ``"opencl:cpu"``, ``"opencl:accelerator"``,
      ``"opencl:custom"``: the first working OpenCL device of that type, and
      ``"opencl:gpu:N"`` (...) the ``N``-th, counted from 0 over every platform in the order
      :func:`devices` lists them.  ``"gpu"`` and ``"accelerator"`` (with ``":N"`` or without)
      are short for ``"opencl:gpu"`` and ``"opencl:accelerator"``; ``"cpu"`` stays the host.

    ``hostarray devices`` lists each device with the kind selectors that name it.

    Raises
    ------
    UnknownFramework
        ``spec`` names a framework hostarray has no backend for (``"cuda:0"``).
    InvalidDevice
        ``spec`` does not parse, or names no device found here (the message lists the
        devices that are).
    DeviceUnavailable
        ``spec`` names a device the driver lists but that failed its probe kernel, or any
        OpenCL device where pyopencl does not import (the message gives the import error
        and the fix).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.device("cpu") is ha.device("host")
    True
    >>> opencl = [d for d in ha.devices() if d.framework == "opencl"]
    >>> not opencl or ha.device("opencl") is opencl[0]
    True
    >>> cpus = [d for d in opencl if d.type == "CPU"]
    >>> not cpus or ha.device("opencl:cpu:0") is cpus[0]
    True
    """
    if spec is None:
        return default_device()
    if isinstance(spec, Device):
        return spec
    if not isinstance(spec, str):
        raise InvalidDevice(spec, f"expected a Device or a string, got {type(spec).__name__}")
    parts = [p.strip() for p in spec.split(":")]
    head, rest = parts[0].lower(), parts[1:]
    if not _WORD.fullmatch(head):
        raise InvalidDevice(spec, f"{_EXPECTED}; {_what_is_here()}")
    if head in ("cpu", "host"):
        if rest:
            raise InvalidDevice(spec, "the host takes no index; 'opencl:cpu:N' is the N-th "
                                      "OpenCL CPU device")
        return HOST
    if head in _BARE_KINDS or head == "opencl":
        _opencl_devices()
        from .backends._pyopencl import import_problem

        problem = import_problem()  # pyopencl does not import: say why and the fix
        if problem is not None:
            raise DeviceUnavailable(spec, problem)
    if head in _BARE_KINDS:
        return _by_kind(spec, head, rest)
    if head != "opencl":
        raise UnknownFramework(head)
    found = _opencl_devices()
    if not rest:
        if not found:
            raise InvalidDevice(spec, f"no working OpenCL device was found: {why_no_opencl()}")
        return found[0]
    if rest[0].lower() in KINDS:
        return _by_kind(spec, rest[0].lower(), rest[1:])
    if len(rest) > 2 or not all(_INDEX.fullmatch(r) for r in rest):
        raise InvalidDevice(spec, f"{_EXPECTED}; {_what_is_here()}")
    p = int(rest[0])
    key = f"opencl:{p}:{int(rest[1]) if len(rest) > 1 else 0}"
    for dev in found:
        if dev._key == key:
            return dev
    for s, name, why in _LEFT_OUT:
        if s in (key, f"opencl:{p}"):  # the device, or its whole platform, failed
            raise DeviceUnavailable(f"{key} ({name})", why)
    raise InvalidDevice(spec, f"no OpenCL device {key}; {_what_is_here()}")


# -- the default device -----------------------------------------------------------------------

# The devices of the `with` blocks open in this thread (or asyncio task), innermost last.  A
# ContextVar, not a threading.local: each thread starts with none, and each asyncio task
# sees only its own blocks.
_BLOCKS: ContextVar[tuple[Device, ...]] = ContextVar("hostarray_default_device", default=())
_FROM_ENVIRONMENT: list[Device] = []  # HOSTARRAY_DEVICE's device, read once


def _enter(dev: Device) -> None:
    _BLOCKS.set((*_BLOCKS.get(), dev))


def _exit(dev: Device) -> None:
    blocks = _BLOCKS.get()
    for i in range(len(blocks) - 1, -1, -1):  # the innermost block of this device
        if blocks[i] is dev:
            _BLOCKS.set(blocks[:i] + blocks[i + 1:])
            return
    raise RuntimeError(f"a default-device block of {dev} ended that this thread did not "
                       f"start")


def environment_device() -> Device | None:
    """The device ``HOSTARRAY_DEVICE`` names, ``None`` where it is unset or empty; a name
    that is no device here raises with the variable and its value first in the message."""
    spec = _settings.device()
    if not spec:
        return None
    try:
        return device(spec)
    except (UnknownFramework, InvalidDevice, DeviceUnavailable) as e:
        e.setting = f"HOSTARRAY_DEVICE={_settings.DEVICE.raw()!r}"
        raise


def environment_prefix(spec: str | None) -> str:
    """``"HOSTARRAY_DEVICE='...': "`` where no device ``spec`` was given and the variable
    chose the device, else ``""``: an error about that device then names what was set."""
    return f"HOSTARRAY_DEVICE={_settings.DEVICE.raw()!r}: " \
        if spec is None and _settings.device() else ""


def _environment_default() -> Device:
    """The device ``HOSTARRAY_DEVICE`` names, the host where it is unset or empty."""
    if not _FROM_ENVIRONMENT:
        dev = environment_device() or HOST
        with _LOCK:
            if not _FROM_ENVIRONMENT:
                _FROM_ENVIRONMENT.append(dev)
    return _FROM_ENVIRONMENT[0]


def default_device(spec: Device | str | None = None, /) -> Device:
    """The default device: where arrays are created when no ``device=`` is given.

    Without an argument, the device in effect here: that of the innermost
    ``with ha.default_device(...):`` block open in this thread, else the device the
    ``HOSTARRAY_DEVICE`` environment variable names (read once), else the host.  Creation
    functions (``asarray``, ``zeros``, ``arange``, ...), ``ha.Program`` (when the default
    is an OpenCL device) and ``__array_namespace_info__().default_device()`` follow it;
    ``*_like`` functions and ``from_dlpack`` follow their input, as the standard says.

    With a device (a :class:`Device` or any string :func:`device` takes), that device, for
    a block: ``with ha.default_device("opencl:gpu"):`` makes it the default until the block
    ends, also when it ends by an exception.  Blocks nest (the innermost wins) and belong
    to the thread (and asyncio task) that opens them: another thread still sees
    ``HOSTARRAY_DEVICE``'s device, or its own blocks.  A :class:`Device` is the context
    manager, so ``with dev:`` is the same block.  Outside a ``with`` statement the call
    changes nothing.

    Parameters
    ----------
    spec : Device or str, optional
        The device of the block.

    Returns
    -------
    Device
        The default device, or the device ``spec`` names (to use in a ``with`` statement).

    Raises
    ------
    UnknownFramework, InvalidDevice, DeviceUnavailable
        ``spec``, or ``HOSTARRAY_DEVICE`` (the message then starts with
        ``HOSTARRAY_DEVICE='...'``), names no working device here.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.default_device() in ha.devices()
    True
    >>> with ha.default_device("cpu"):
    ...     ha.zeros(3).device
    Device('cpu')
    >>> opencl = [d for d in ha.devices() if d.framework == "opencl"]
    >>> if opencl:
    ...     with ha.default_device(opencl[0]) as dev:
    ...         assert ha.asarray([1.0, 2.0]).device == dev
    ...         assert ha.__array_namespace_info__().default_device() == dev
    """
    if spec is not None:
        return device(spec)
    blocks = _BLOCKS.get()
    return blocks[-1] if blocks else _environment_default()
