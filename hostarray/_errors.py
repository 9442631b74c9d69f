"""Typed errors of hostarray (re-exported by :mod:`hostarray.hostptr`).

Each error carries the data that explains it, and its message says what to
do next.  ``Refused`` carries a :class:`Refusal` whose ``kind`` is one of
``"device_type"``, ``"alignment"``, ``"size"`` or ``"backend"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Refusal", "HostPtrError", "Refused", "UnknownFramework", "NotHostBacked",
           "BufferExists", "InvalidDevice", "DeviceUnavailable", "BuildFailed", "BadLaunch",
           "LaunchFailed",
           "refusal_message", "error_message"]


@dataclass(frozen=True)
class Refusal:
    """Why a backend refused a host-pointer buffer.

    Attributes
    ----------
    kind : str
        ``"device_type"``, ``"alignment"``, ``"size"`` or ``"backend"``.
    address, required : int or None
        For ``"alignment"``: the host address and the alignment (bytes) it misses.
    size, limit : int or None
        For ``"size"``: the requested bytes and the device's limit (0 bytes is refused too).
    code, text : int/str or None
        For ``"backend"``: the driver's error code and text.
    device_type : str or None
        For ``"device_type"``: the type of the device that can't use host memory.

    Examples
    --------
    >>> from hostarray.hostptr import Refusal, refusal_message
    >>> r = Refusal("size", size=0, limit=1024)
    >>> refusal_message(r).startswith("zero bytes")
    True
    """

    kind: str
    address: int | None = None
    required: int | None = None
    size: int | None = None
    limit: int | None = None
    code: int | None = None
    text: str | None = None
    device_type: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("device_type", "alignment", "size", "backend"):
            raise ValueError(f"unknown refusal kind {self.kind!r}")


def refusal_message(reason: Refusal) -> str:
    """One sentence saying why a host-pointer buffer was refused and what to do.

    Examples
    --------
    >>> from hostarray.hostptr import Refusal, refusal_message
    >>> msg = refusal_message(Refusal("alignment", address=0x1004, required=128))
    >>> "ha.empty(...)" in msg
    True
    """
    k = reason.kind
    if k == "alignment":
        if reason.text:  # a view inside a buffer: the text says where it may start instead
            return f"{reason.text}."
        return (f"host memory at {reason.address:#x} is not aligned to the device's "
                f"{reason.required} bytes; allocate with ha.empty(...) or "
                f"ha.asarray(..., copy=True) for page-aligned storage.")
    if k == "size":
        if not reason.size:
            return ("zero bytes can't be shared with a device; give the array at least "
                    "one element.")
        return (f"{reason.size} bytes exceed the device's largest allocation of "
                f"{reason.limit} bytes; split the array into chunks of at most that size.")
    if k == "device_type":
        return (f"a {reason.device_type} device can't use host memory; pick an OpenCL "
                f"device from ha.devices().")
    return (f"the driver refused the buffer (error {reason.code}: {reason.text}); check the "
            f"device with `hostarray devices`, or allow a copy with HOSTARRAY_LINK=copied.")


class HostPtrError(Exception):
    """Base class of hostarray's typed errors."""

    def __str__(self) -> str:
        return error_message(self)


class Refused(HostPtrError):
    """The backend refused a host-pointer buffer; the array is unchanged.

    Examples
    --------
    >>> import numpy as np, hostarray as ha
    >>> from hostarray import hostptr
    >>> try:
    ...     hostptr.attach(ha.asarray(np.zeros(0)), ha.device("cpu"))
    ... except hostptr.Refused as e:
    ...     print(e.reason.kind)
    device_type
    """

    def __init__(self, device: Any, reason: Refusal) -> None:
        super().__init__(device, reason)
        self.device = device
        self.reason = reason


class UnknownFramework(HostPtrError, ValueError):
    """A device string names a framework hostarray has no backend for.

    Examples
    --------
    >>> import hostarray as ha
    >>> try:
    ...     ha.device("cuda:0")
    ... except ha.hostptr.UnknownFramework as e:
    ...     print(e.framework)
    cuda
    """

    def __init__(self, framework: str) -> None:
        super().__init__(framework)
        self.framework = framework


class NotHostBacked(HostPtrError):
    """The array has no single host buffer to share."""

    def __init__(self, array_id: int, why: str = "") -> None:
        super().__init__(array_id, why)
        self.array_id = array_id
        self.why = why


class BufferExists(HostPtrError):
    """The array already has a buffer on that device."""

    def __init__(self, array_id: int, device: Any) -> None:
        super().__init__(array_id, device)
        self.array_id = array_id
        self.device = device


class InvalidDevice(HostPtrError, ValueError):
    """A device string that does not parse, or names no device found here."""

    def __init__(self, spec: Any, why: str) -> None:
        super().__init__(spec, why)
        self.spec = spec
        self.why = why


class DeviceUnavailable(HostPtrError, RuntimeError):
    """A device that exists but does not work (failed its test build, or vanished)."""

    def __init__(self, device: Any, why: str) -> None:
        super().__init__(device, why)
        self.device = device
        self.why = why


class BuildFailed(HostPtrError, RuntimeError):
    """An OpenCL program failed to build; ``log`` has the compiler's ``error:`` lines."""

    def __init__(self, device: Any, log: str, full_log: str = "") -> None:
        super().__init__(device, log)
        self.device = device
        self.log = log
        self.full_log = full_log or log


class BadLaunch(HostPtrError, TypeError):
    """A kernel was launched with arguments or sizes it can't take; nothing was published.

    Attributes
    ----------
    kernel, why : str
        The kernel's name and what was wrong.
    argument : str or None
        The argument at fault, where one is.
    declared : str or None
        The argument's declared OpenCL type (a type mismatch).
    dtype : numpy.dtype or None
        The array's element type (a type mismatch).
    limit, requested : Any
        The device's or kernel's limit and what the launch asked for (sizes, bytes).
    """

    def __init__(self, kernel: str, why: str, *, argument: str | None = None,
                 declared: str | None = None, dtype: Any = None, limit: Any = None,
                 requested: Any = None) -> None:
        super().__init__(kernel, why)
        self.kernel = kernel
        self.why = why
        self.argument = argument
        self.declared = declared
        self.dtype = dtype
        self.limit = limit
        self.requested = requested


class LaunchFailed(HostPtrError, RuntimeError):
    """The device reported a launch (or a transfer) as failed.

    Raised once per failed launch, by whichever comes first: the first host
    access to an array the launch used, or ``launch.wait()``.  The arrays
    then hold whatever the device left (the failed launch's writes may be
    missing or partial) and work normally again.

    Attributes
    ----------
    device : Device or str
        Where it failed, named as ``str(device)`` gives it (``opencl:P:D``).
    status : int
        The failed command's own OpenCL execution status (negative).
    what : str
        ``"kernel 'NAME'"`` for a kernel launch, otherwise what failed.
    kernel : str or None
        The kernel's name, for a kernel launch.

    Examples
    --------
    >>> from hostarray import hostptr
    >>> e = hostptr.LaunchFailed("opencl:0:0", -5, kernel="add")
    >>> e.status, e.kernel, e.what
    (-5, 'add', "kernel 'add'")
    """

    # what common negative execution statuses mean
    STATUS_NAMES = {
        -1: "the driver gives no reason; PoCL reports it for a command whose dependency "
            "failed",
        -4: "CL_MEM_OBJECT_ALLOCATION_FAILURE",
        -5: "CL_OUT_OF_RESOURCES, what GPU drivers report for a faulting kernel",
        -6: "CL_OUT_OF_HOST_MEMORY",
        -14: "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST",
        -9999: "NVIDIA: an illegal memory access",
    }

    def __init__(self, device: Any, status: int, what: str | None = None,
                 kernel: str | None = None) -> None:
        if what is None:
            what = f"kernel {kernel!r}" if kernel else "a launch"
        super().__init__(device, status, what, kernel)
        self.device = device
        self.status = status
        self.what = what
        self.kernel = kernel


def error_message(err: BaseException) -> str:
    """One sentence that says what went wrong and what to do next.

    Examples
    --------
    >>> from hostarray import hostptr
    >>> print(hostptr.error_message(hostptr.UnknownFramework("cuda")))
    no backend for framework 'cuda'; use 'cpu' or 'opencl:P:D' (see `hostarray devices`).
    """
    if isinstance(err, Refused):
        return f"{err.device} refused a host-pointer buffer: {refusal_message(err.reason)}"
    if isinstance(err, UnknownFramework):
        return (f"no backend for framework {err.framework!r}; use 'cpu' or 'opencl:P:D' "
                f"(see `hostarray devices`).")
    if isinstance(err, NotHostBacked):
        why = f" ({err.why})" if err.why else ""
        return (f"array {err.array_id:#x} has no single host buffer to share{why}; make a "
                f"contiguous copy with ha.asarray(x, copy=True).")
    if isinstance(err, BufferExists):
        return (f"array {err.array_id:#x} already has a buffer on {err.device}; free it first "
                f"with hostptr.free_buffer(x, device).")
    if isinstance(err, InvalidDevice):
        return (f"{err.spec!r} is not a device here ({err.why}); use 'cpu', 'opencl' or "
                f"'opencl:P:D' as listed by `hostarray devices`.")
    if isinstance(err, DeviceUnavailable):
        return (f"{err.device} does not work ({err.why}); pick another device from "
                f"`hostarray devices`.")
    if isinstance(err, BuildFailed):
        return f"the OpenCL program failed to build on {err.device}; fix the source:\n{err.log}"
    if isinstance(err, BadLaunch):
        return f"kernel {err.kernel!r} can't be launched: {err.why}"
    if isinstance(err, LaunchFailed):
        meaning = LaunchFailed.STATUS_NAMES.get(err.status)
        status = f"{err.status}: {meaning}" if meaning else str(err.status)
        return (f"{err.what} failed on {err.device} (OpenCL status {status}); its writes are "
                f"missing or partial: check the kernel (an out-of-bounds access shows under "
                f"Oclgrind) and launch again.")
    return str(err)
