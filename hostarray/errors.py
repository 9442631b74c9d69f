# Over 700 lines: every typed error (and the one warning) with the message it builds, in one module.
"""hostarray's typed errors, as :mod:`numpy.exceptions` is for numpy.

Import them from here (``from hostarray.errors import Refused``, or
``ha.errors.Refused``); :mod:`hostarray.hostptr` re-exports the same objects
under the same names (``hostptr.Refused is errors.Refused``).

Every error derives from :class:`HostPtrError` and from the builtin exception
that says what kind of fault it is, so ``except ValueError`` catches a refused
argument whether numpy or hostarray refused it:

========================  ================  =========================================
error                     builtin base      raised when
========================  ================  =========================================
``HostPtrError``          ``Exception``     (the base class)
``Refused``               ``ValueError``    a device can't use this memory
``UnknownFramework``      ``ValueError``    a device string names no backend
``NotHostBacked``         ``ValueError``    memory that is not one contiguous range
``BufferExists``          ``ValueError``    the array already has a buffer there
``InvalidDevice``         ``ValueError``    a device string that names no device here
``DeviceUnavailable``     ``RuntimeError``  a device that exists but does not work
``BuildFailed``           ``RuntimeError``  an OpenCL program that does not compile
``BadLaunch``             ``TypeError``     a launch with arguments it can't take
``LaunchFailed``          ``RuntimeError``  the device reported a launch as failed
``TransferDisallowed``    ``RuntimeError``  the transfer guard refused a transfer
``InUse``                 ``RuntimeError``  bytes an open ``cl_buffer`` block may write
``DeviceOutOfMemory``     ``MemoryError``   no device memory for a result, even after
                                            the device-compute pool was emptied
========================  ================  =========================================

One warning lives here too: :class:`PerformanceWarning` (a ``UserWarning``), issued once
per array when the user's own numpy array, still reachable, makes every launch on a
mapped or copied link move the whole array; the standard :mod:`warnings` filters
silence it.

Each error carries the data that explains it as attributes, and builds its own
message: ``str(e)`` is one sentence that says what was wrong and what to do
next.  ``Refused`` carries a :class:`Refusal` whose ``kind`` is one of
``"device_type"``, ``"alignment"``, ``"size"`` or ``"backend"``.  Every error
pickles with its data.

Examples
--------
>>> import numpy as np, hostarray as ha
>>> a = np.frombuffer(bytearray(65), np.float32, count=16, offset=1)  # 1 byte off
>>> try:
...     ha.hostptr.of_numpy(ha.device("opencl"), a)
... except ValueError as e:  # a hostarray.errors.Refused
...     print(type(e).__name__, e.reason.kind)
Refused alignment
"""

from __future__ import annotations

import os
import sys
import warnings
import weakref
from dataclasses import dataclass
from typing import Any

__all__ = ["HostPtrError", "Refused", "Refusal", "UnknownFramework", "NotHostBacked",
           "BufferExists", "InvalidDevice", "DeviceUnavailable", "BuildFailed", "BadLaunch",
           "LaunchFailed", "TransferDisallowed", "InUse", "DeviceOutOfMemory",
           "PerformanceWarning", "refusal_message",
           "error_message"]


@dataclass(frozen=True)
class Refusal:
    """Why a backend refused a host-pointer buffer; ``str(r)`` says so in one sentence.

    Attributes
    ----------
    kind : str
        ``"device_type"``, ``"alignment"``, ``"size"`` or ``"backend"``.
    address, required : int or None
        For ``"alignment"``: the host address and the alignment (bytes) it misses.
    size, limit : int or None
        For ``"size"``: the requested bytes and the device's limit (0 bytes is refused too).
    code, text : int/str or None
        For ``"backend"``: the driver's error code and text.  For ``"alignment"``, a
        ``text`` replaces the message (a view inside a buffer says where it may start); so
        it does for ``"device_type"`` (what the refused call needs instead).
    device_type : str or None
        For ``"device_type"``: the type of the device that can't use host memory.

    Examples
    --------
    >>> from hostarray.errors import Refusal
    >>> str(Refusal("size", size=0, limit=1024)).startswith("zero bytes")
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

    def __str__(self) -> str:
        return getattr(self, f"_{self.kind}")()

    def _alignment(self) -> str:
        if self.text:  # a view inside a buffer: the text says where it may start instead
            return f"{self.text}."
        return (f"host memory at {self.address:#x} is not aligned to the device's "
                f"{self.required} bytes; allocate with ha.empty(...) or "
                f"ha.asarray(..., copy=True) for page-aligned storage.")

    def _size(self) -> str:
        if not self.size:
            return ("zero bytes can't be shared with a device; give the array at least "
                    "one element.")
        return (f"{self.size} bytes exceed the device's largest allocation of "
                f"{self.limit} bytes; split the array into chunks of at most that size.")

    def _device_type(self) -> str:
        if self.text:  # what the refused call needs instead, in the caller's words
            return f"{self.text}."
        return (f"a {self.device_type} device can't use host memory; pick an OpenCL "
                f"device from ha.devices().")

    def _backend(self) -> str:
        return (f"the driver refused the buffer (error {self.code}: {self.text}); check the "
                f"device with `hostarray devices`, or allow a copy with HOSTARRAY_LINK=copied.")


def refusal_message(reason: Refusal) -> str:
    """One sentence saying why a host-pointer buffer was refused and what to do:
    ``str(reason)``.

    Examples
    --------
    >>> from hostarray.errors import Refusal, refusal_message
    >>> msg = refusal_message(Refusal("alignment", address=0x1004, required=128))
    >>> "ha.empty(...)" in msg
    True
    """
    return str(reason)


class HostPtrError(Exception):
    """Base class of hostarray's typed errors (derives from ``Exception`` only).

    Each subclass also derives from the builtin exception of its kind (``ValueError``,
    ``TypeError`` or ``RuntimeError``), keeps its data as attributes, pickles with them,
    and builds its message in its own ``__str__``.  A device among that data is pickled
    by its name (``e.device`` is then the string ``str(device)``, which compares equal
    to the device), so an error unpickles also in a process that does not have the
    device.

    Attributes
    ----------
    args : tuple
        What the error was raised with (each subclass also names its data: see its
        own Attributes).

    Examples
    --------
    >>> import hostarray as ha
    >>> from hostarray import errors
    >>> try:
    ...     ha.device("opencl:x:y")
    ... except errors.HostPtrError as e:  # every typed error of hostarray
    ...     print(type(e).__name__)
    InvalidDevice
    """

    def __reduce__(self) -> tuple[Any, ...]:
        # A Device pickles by name and is looked up again when unpickled: inside an error,
        # that lookup would fail where the device is not (another machine), and replace
        # the error by an InvalidDevice.  The name alone travels instead.
        return (type(self), tuple(_by_name(a) for a in self.args),
                {k: _by_name(v) for k, v in vars(self).items()})


def _by_name(value: Any) -> Any:
    """``str(value)`` for a :class:`~hostarray.Device`, else ``value`` itself.

    A device is known by its class's ``_pickled_by_name_in_errors`` (``True`` on
    :class:`~hostarray.Device`), not by importing that class: this module imports nothing
    of hostarray, as :mod:`numpy.exceptions` nothing of numpy."""
    return str(value) if getattr(type(value), "_pickled_by_name_in_errors", False) else value


def _from(setting: str | None) -> str:
    """The start of a message about a device string that came from ``setting`` (an
    environment variable and its value), else nothing."""
    return f"{setting}: " if setting else ""


class Refused(HostPtrError, ValueError):
    """The backend refused a host-pointer buffer; the array is unchanged.

    A ``ValueError``: the memory given is the wrong value for that device (misaligned,
    empty, too large, or a device that can't use host memory at all).

    Attributes
    ----------
    device : Device or str
        The device that refused.
    reason : Refusal
        Why; ``reason.kind`` is ``"device_type"``, ``"alignment"``, ``"size"`` or
        ``"backend"``.

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

    def __str__(self) -> str:
        if self.reason.kind == "device_type":  # not a buffer's fault: the device's kind
            return f"{self.device} can't hold device buffers or run kernels: {self.reason}"
        return f"{self.device} refused a host-pointer buffer: {self.reason}"


class UnknownFramework(HostPtrError, ValueError):
    """A device string names a framework hostarray has no backend for (a ``ValueError``).

    Attributes
    ----------
    framework : str
        The framework named (``"cuda"`` for ``"cuda:0"``).
    setting : str or None
        Where the device string came from when it was not an argument: the environment
        variable and its value (``"HOSTARRAY_DEVICE='cuda:0'"``); the message then starts
        with it.  ``None`` for an argument.

    Examples
    --------
    >>> import hostarray as ha
    >>> try:
    ...     ha.device("cuda:0")
    ... except ha.errors.UnknownFramework as e:
    ...     print(e.framework)
    cuda
    """

    def __init__(self, framework: str, *, setting: str | None = None) -> None:
        super().__init__(framework)
        self.framework = framework
        self.setting = setting

    def __str__(self) -> str:
        return (f"{_from(self.setting)}no backend for framework {self.framework!r}; use "
                f"'cpu', 'opencl', 'opencl:P:D' or a kind such as 'gpu' (see `hostarray "
                f"devices`).")


class NotHostBacked(HostPtrError, ValueError):
    """The array has no single host buffer to share.

    A ``ValueError``, not a ``TypeError``: the argument is an array of the right type,
    but its memory layout (strided or reversed, not one contiguous range) is a value the
    device can't use; a contiguous copy of the same array is accepted.  numpy says
    ``ValueError`` for a layout it can't use without a copy too (``copy=False``).

    Attributes
    ----------
    array_id : int
        ``id()`` of the array at fault.
    why : str
        What about its memory is wrong (may be empty).

    Examples
    --------
    >>> import numpy as np, hostarray as ha
    >>> from hostarray import hostptr
    >>> x = ha.asarray(np.arange(8.0))
    >>> gpu = ha.devices()[-1]
    >>> if gpu.framework == "opencl":
    ...     try:
    ...         hostptr.attach(x[::2], gpu)      # every other element: not one range
    ...     except hostptr.NotHostBacked as e:
    ...         assert "contiguous copy" in str(e)
    """

    def __init__(self, array_id: int, why: str = "") -> None:
        super().__init__(array_id, why)
        self.array_id = array_id
        self.why = why

    def __str__(self) -> str:
        why = f" ({self.why})" if self.why else ""
        return (f"array {self.array_id:#x} has no single host buffer to share{why}; make a "
                f"contiguous copy with ha.asarray(x, copy=True).")


class BufferExists(HostPtrError, ValueError):
    """The array already has a buffer on that device.

    A ``ValueError``, not a ``RuntimeError``: nothing failed; the call is refused for
    its arguments (this array on this device), as :func:`hostarray.hostptr.install`
    refuses other memory it can't take, and ``except ValueError`` around an attach
    catches every refusal of the memory given.

    Attributes
    ----------
    array_id : int
        ``id()`` of the array.
    device : Device or str
        The device it already has a buffer on.
    why : str
        Where the buffer is, when it is not the array's own (may be empty): e.g. the
        memory given to :func:`hostarray.hostptr.install` belongs to another array that
        has a buffer there.

    Examples
    --------
    >>> import hostarray as ha
    >>> from hostarray import hostptr
    >>> x = ha.zeros(16)
    >>> gpu = ha.devices()[-1]
    >>> if gpu.framework == "opencl":
    ...     _ = hostptr.attach(x, gpu)
    ...     try:
    ...         hostptr.attach(x, gpu)
    ...     except hostptr.BufferExists as e:
    ...         assert e.array_id == id(x)
    """

    def __init__(self, array_id: int, device: Any, why: str = "") -> None:
        super().__init__(array_id, device, why)
        self.array_id = array_id
        self.device = device
        self.why = why

    def __str__(self) -> str:
        if self.why:
            return f"array {self.array_id:#x} can't get a buffer on {self.device}: {self.why}"
        return (f"array {self.array_id:#x} already has a buffer on {self.device}; free it "
                f"first with hostptr.free_buffer(x, device).")


class InvalidDevice(HostPtrError, ValueError):
    """A device string that does not parse, or names no device found here (a ``ValueError``).

    Attributes
    ----------
    spec : Any
        What was given as the device.
    why : str
        Why it names no device here.
    setting : str or None
        Where the device string came from when it was not an argument: the environment
        variable and its value (``"HOSTARRAY_DEVICE='cuda:0'"``); the message then starts
        with it.  ``None`` for an argument.

    Examples
    --------
    >>> import hostarray as ha
    >>> try:
    ...     ha.device("opencl:7:9")
    ... except ha.errors.InvalidDevice as e:
    ...     print(e.spec)
    opencl:7:9
    """

    def __init__(self, spec: Any, why: str, *, setting: str | None = None) -> None:
        super().__init__(spec, why)
        self.spec = spec
        self.why = why
        self.setting = setting

    def __str__(self) -> str:
        said = f"{_from(self.setting)}{self.spec!r} is not a device here: {self.why}"
        # one suggestion, never two: where the reason names what to use, only where to look
        if "; use " in self.why:
            return f"{said}; `hostarray devices` lists them."
        if self.why.startswith("expected '"):  # the forms it takes, listed
            return f"{said}, as listed by `hostarray devices`."
        return (f"{said}; use 'cpu', 'opencl', 'opencl:P:D' or a kind such as 'gpu' or "
                f"'opencl:cpu:0', as listed by `hostarray devices`.")


class DeviceUnavailable(HostPtrError, RuntimeError):
    """A device that exists but does not work (failed its test build, or vanished).

    A ``RuntimeError``: the name is right, the device fails at run time.

    Attributes
    ----------
    device : Device or str
        The device.
    why : str
        How it failed.
    setting : str or None
        Where the device string came from when it was not an argument: the environment
        variable and its value (``"HOSTARRAY_DEVICE='cuda:0'"``); the message then starts
        with it.  ``None`` for an argument.

    Examples
    --------
    >>> from hostarray.errors import DeviceUnavailable
    >>> e = DeviceUnavailable("opencl:1:0", "it failed a test build")
    >>> "pick another device" in str(e), issubclass(DeviceUnavailable, RuntimeError)
    (True, True)
    """

    def __init__(self, device: Any, why: str, *, setting: str | None = None) -> None:
        super().__init__(device, why)
        self.device = device
        self.why = why
        self.setting = setting

    def __str__(self) -> str:
        return (f"{_from(self.setting)}{self.device} does not work ({self.why}); pick another "
                f"device from `hostarray devices`.")


class BuildFailed(HostPtrError, RuntimeError):
    """An OpenCL program failed to build (a ``RuntimeError``): the source does not
    compile, or the driver refused the build options (``CL_INVALID_BUILD_OPTIONS``, or
    NVIDIA's "Don't understand command line argument": then ``options`` is set, and the
    message says "bad build options", not "fix the source").

    Attributes
    ----------
    device : Device or str
        Where it was built.
    log : str
        The compiler's errors (the message quotes them): for a :class:`~hostarray.Program`,
        each as ``error at line L, column C: ...`` with that line of the source and a
        caret under the column, no temporary file named; for refused options, what the
        driver said about them (PoCL: ``Invalid build option: -bogus``).
    full_log : str
        The compiler's whole log.
    options : tuple of str or None
        The build options the driver refused, as given to :class:`~hostarray.Program`
        (a string split into options); ``None`` where the source failed to compile.

    Examples
    --------
    >>> import hostarray as ha
    >>> gpu = ha.devices()[-1]
    >>> if gpu.framework == "opencl":
    ...     try:
    ...         ha.Program("__kernel void k(__global float *x) { x[0] = nope; }", device=gpu)
    ...     except ha.errors.BuildFailed as e:
    ...         assert "nope" in e.log
    """

    def __init__(self, device: Any, log: str, full_log: str = "", *,
                 options: tuple[str, ...] | None = None) -> None:
        super().__init__(device, log)
        self.device = device
        self.log = log
        self.full_log = full_log or log
        self.options = options

    def __str__(self) -> str:
        if self.options is not None:
            said = "; ".join(self.log.splitlines()) or "it gives no reason"
            return (f"the OpenCL program was not built on {self.device}: bad build options "
                    f"{list(self.options)!r}, the driver refused them ({said}); pass options "
                    f"the driver takes (a string is split as a shell would, a list is passed "
                    f"one option per item)")
        return f"the OpenCL program failed to build on {self.device}; fix the source:\n{self.log}"


class BadLaunch(HostPtrError, TypeError):
    """A kernel was launched with arguments or sizes it can't take; nothing was published.

    A ``TypeError``, as Python's for a call that does not match the callee's signature:
    most refusals are a wrong number or kind of arguments for the kernel's declaration.
    A refusal for a size above a device or kernel limit (work-group size, ``__local``
    memory) would arguably be a ``ValueError``; it is the same one class all the same,
    so that one ``except BadLaunch`` (or ``except TypeError``) catches every refused
    launch, and ``e.limit`` / ``e.requested`` tell those apart.

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
    limit, requested : tuple of int or None
        The device's or kernel's limit and what the launch asked for, where a limit
        refused it (``None`` otherwise).  Always tuples of one length, by one rule: where
        the limit is per dimension, one entry per dimension of the launch
        (``requested`` the global or local size as given, ``limit`` the limit in each of
        those dimensions: ``local_size=(1, 1, 8192)`` on a device allowing 4096 per
        dimension gives ``limit == (4096, 4096, 4096)``, ``requested == (1, 1, 8192)``;
        a required work-group size of more dimensions than the launch gives three, the
        launch's sizes padded with 1 as OpenCL pads them); where the limit is a total,
        one count each (``(n,)``: work-items, work-items per work-group, work-groups,
        elements, ``__local`` bytes).

    Examples
    --------
    >>> import hostarray as ha
    >>> gpu = ha.devices()[-1]
    >>> if gpu.framework == "opencl":
    ...     prg = ha.Program("__kernel void set(__global float *x, const float v) "
    ...                      "{ x[get_global_id(0)] = v; }", device=gpu)
    ...     try:
    ...         prg.set(4, ha.zeros(4, dtype=ha.float32), "seven")
    ...     except ha.errors.BadLaunch as e:
    ...         assert e.argument == "v"
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
        self.limit = _ints(limit)
        self.requested = _ints(requested)

    def __str__(self) -> str:
        return f"kernel {self.kernel!r} can't be launched: {self.why}"


def _ints(value: Any) -> tuple[int, ...] | None:
    """A size or a count as a tuple of ints (``BadLaunch.limit`` and ``.requested``): a
    number gives a 1-tuple, a sequence its items, ``None`` stays ``None``."""
    if value is None:
        return None
    try:
        items = iter(value)
    except TypeError:  # a number
        return (int(value),)
    return tuple(int(v) for v in items)


class LaunchFailed(HostPtrError, RuntimeError):
    """The device reported a launch (or a transfer) as failed (a ``RuntimeError``).

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
    >>> from hostarray.errors import LaunchFailed
    >>> e = LaunchFailed("opencl:0:0", -5, kernel="add")
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

    def __str__(self) -> str:
        meaning = self.STATUS_NAMES.get(self.status)
        status = f"{self.status}: {meaning}" if meaning else str(self.status)
        return (f"{self.what} failed on {self.device} (OpenCL status {status}); its writes "
                f"are missing or partial: check the kernel (an out-of-bounds access shows "
                f"under Oclgrind) and launch again.")


class TransferDisallowed(HostPtrError, RuntimeError):
    """The transfer guard refused an implicit transfer (a ``RuntimeError``); nothing moved.

    Raised under ``ha.transfer_guard("disallow")`` (or that process default) by the access
    or launch that needed the transfer, before any byte moved: the array's bytes, its
    coherence state and ``ha.stats()`` are as they were, so the caller can make the
    transfer explicit (:func:`hostarray.hostptr.acquire_device_writes`,
    :func:`~hostarray.hostptr.publish_host_writes`, which the guard always allows) and try
    again.  A ``RuntimeError``: the call is right, the process's setting refuses it.

    Attributes
    ----------
    direction : str
        ``"acquire"`` (device to host) or ``"publish"`` (host to device).
    nbytes : int
        The bytes the transfer would have covered.
    device : Device or str
        The device it would have moved them from or to.
    trigger : str
        What needed it (``"HostPtrArray.__getitem__"``, ``"Kernel.__call__"`` ...), and the
        caller's file and line where hostarray found them; may be empty.

    Examples
    --------
    >>> from hostarray.errors import TransferDisallowed
    >>> e = TransferDisallowed("acquire", 4096, "opencl:0:0")
    >>> e.direction, e.nbytes, issubclass(TransferDisallowed, RuntimeError)
    ('acquire', 4096, True)
    """

    def __init__(self, direction: str, nbytes: int, device: Any, trigger: str = "") -> None:
        super().__init__(direction, nbytes, device, trigger)
        self.direction = direction
        self.nbytes = nbytes
        self.device = device
        self.trigger = trigger

    def __str__(self) -> str:
        how = {"acquire": ("from", "hostptr.acquire_device_writes(x, device) before the access"),
               "publish": ("to", "hostptr.publish_host_writes(x, device) before the launch")}
        to, call = how.get(self.direction, ("with", "the hostptr call that moves it"))
        by = f" (needed by {self.trigger})" if self.trigger else ""
        return (f"the transfer guard refused an implicit {self.direction} of {self.nbytes} "
                f"bytes {to} {self.device}{by}; nothing moved: make it explicit with {call}, "
                f"or allow it in a block: with ha.transfer_guard('allow'): ...")


class InUse(HostPtrError, RuntimeError):
    """A write to bytes that an open :func:`hostarray.hostptr.cl_buffer` block may write
    (access ``"w"`` or ``"rw"``), from the host or a launch on another device; refused
    before anything changed (a ``RuntimeError``: the call is right, its timing is not).

    The block's writes land when it ends, over the whole range it holds; a write made
    meanwhile elsewhere could not be ordered with the raw code's and would be lost.  Reads
    are allowed: on a mapped or copied link a host read sees the host's bytes where the
    host holds the newest, else it acquires the device's, after what the raw code enqueued
    so far; on a shared link the raw code works on the host bytes, unordered with them.
    Also raised for any access from the block's own device once
    :func:`~hostarray.hostptr.free_buffer` let go of the buffer the block holds (the raw
    code's bytes are in it alone until the block ends).

    Attributes
    ----------
    device : Device or str
        The device of the open block.
    byte_range : tuple of int
        ``(start, stop)``: the bytes of the array's memory the block holds.
    what : str
        The refused write (``"a host write"``, ``"a launch of kernel 'k' on opencl:1:0"``).

    Examples
    --------
    >>> from hostarray.errors import InUse
    >>> e = InUse("opencl:0:0", (0, 1024), "a host write")
    >>> e.byte_range, issubclass(InUse, RuntimeError)
    ((0, 1024), True)
    """

    def __init__(self, device: Any, byte_range: tuple[int, int], what: str) -> None:
        super().__init__(device, byte_range, what)
        self.device = device
        self.byte_range = tuple(byte_range)
        self.what = what

    def __str__(self) -> str:
        lo, hi = self.byte_range
        return (f"{self.what} (bytes {lo}-{hi} of this array) is refused: an open "
                f"hostptr.cl_buffer block on {self.device} may write them, and its writes land "
                f"when it ends; write after the block, or inside it through the raw buffer")


class DeviceOutOfMemory(HostPtrError, MemoryError):
    """No memory for a result or temporary of the device compute path, even after the
    pool of idle device buffers was emptied and the allocation tried once more (a
    ``MemoryError``: nothing was allocated, the operation did not run).

    Attributes
    ----------
    device : Device or str
        The device that refused the buffer.
    nbytes : int
        The bytes asked for.
    freed : int
        The bytes of idle buffers the pool gave back before trying again.
    cause : str
        The driver's (or the OS's) words.

    Examples
    --------
    >>> from hostarray.errors import DeviceOutOfMemory
    >>> e = DeviceOutOfMemory("opencl:0:0", 1 << 30, 0, "CL_MEM_OBJECT_ALLOCATION_FAILURE")
    >>> e.nbytes, issubclass(DeviceOutOfMemory, MemoryError)
    (1073741824, True)
    """

    def __init__(self, device: Any, nbytes: int, freed: int, cause: str = "") -> None:
        super().__init__(device, nbytes, freed, cause)
        self.device = device
        self.nbytes = nbytes
        self.freed = freed
        self.cause = cause

    def __str__(self) -> str:
        why = f" ({self.cause})" if self.cause else ""
        return (f"{self.device} has no memory for a {self.nbytes}-byte device result{why}, "
                f"even after the pool gave back {self.freed} idle bytes; drop arrays you no "
                f"longer need (del x), work in smaller pieces, or keep the work on the host "
                f"(ha.set_device_compute_threshold(None))")


class PerformanceWarning(UserWarning):
    """An array adopted from the user's numpy array (``ha.asarray(a, device=dev)`` without
    a copy) that the user still reaches: on a mapped or copied link, every launch that
    uses it publishes all of it before and acquires all of it after (the user may read
    or write ``a`` at any moment), where a private array moves only what changed.

    Issued once per array, at the first such launch.  The remedies: drop the numpy array
    (``del a``: the next launch sees nobody else holds the memory), or make hostarray's
    own copy (``ha.asarray(a, device=dev, copy=True)``).  Silence it with the standard
    filters (``warnings.filterwarnings("ignore", category=PerformanceWarning)``).

    Attributes
    ----------
    nbytes : int
        The bytes each launch publishes, and acquires again (the whole adopted array).
    device : object
        The device of the launch.
    link : str
        Its host link (``"mapped"`` or ``"copied"``; never issued on a shared link).

    Examples
    --------
    >>> from hostarray.errors import PerformanceWarning
    >>> w = PerformanceWarning(1 << 30, "opencl:0:0", "copied")
    >>> issubclass(PerformanceWarning, UserWarning), w.nbytes
    (True, 1073741824)
    """

    def __init__(self, nbytes: int, device: Any, link: str) -> None:
        super().__init__(nbytes, device, link)
        self.nbytes = nbytes
        self.device = device
        self.link = link

    def __str__(self) -> str:
        return (f"every launch on {self.device} ({self.link} link) publishes all "
                f"{self.nbytes} bytes of an array adopted from a numpy array you still hold, "
                f"and acquires what it writes (you may read or write the numpy array at any "
                f"time); drop the numpy array (del it) or adopt a copy "
                f"(ha.asarray(a, device=..., copy=True)) so that launches move only what "
                f"changed")


_WARNED: weakref.WeakSet[Any] = weakref.WeakSet()  # the storages' user memory warned about
_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _warn_kept_user_memory(owner: Any, nbytes: int, device: Any, link: str) -> None:
    """Issue :class:`PerformanceWarning` for ``owner`` (a storage's record of the user's
    memory) once, attributed to the first frame outside hostarray (the user's line, so
    that the default filter shows it once per line of theirs); never on a shared link."""
    if link == "shared" or owner in _WARNED:
        return
    frame: Any = sys._getframe(0)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    warnings.warn(PerformanceWarning(nbytes, device, link), stacklevel=level)
    _WARNED.add(owner)  # after: a warning raised as an error (a refused call) left no trace


def error_message(err: BaseException) -> str:
    """One sentence that says what went wrong and what to do next: ``str(err)``
    (each error builds its own message).

    Examples
    --------
    >>> from hostarray.errors import UnknownFramework, error_message
    >>> print(error_message(UnknownFramework("cuda")))
    no backend for framework 'cuda'; use 'cpu', 'opencl', 'opencl:P:D' or a kind such as
    'gpu' (see `hostarray devices`).
    """
    return str(err)
