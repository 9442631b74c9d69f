"""The host-pointer buffer API: attach arrays to devices, sync them explicitly.

This is hostarray's lowest public layer, modelled on a typed OCaml API for
host-pointer buffers.  Most users never call it: kernels and array
operations publish and acquire on their own.  It is there to attach eagerly
(and see refusals early), to ask how a buffer relates to host memory, and
to force or discard synchronisation.

Every error is a :class:`~hostarray.errors.HostPtrError` that carries its data; a
refused call changes nothing.  The errors live in :mod:`hostarray.errors`; this module
re-exports them under the same names (the same objects: ``hostptr.Refused is
errors.Refused``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from . import errors
from ._devices import Device
from ._devices import device as _parse_device
from ._guard import EXPLICIT
from ._sharing import check_memory, check_storage, ensure_buffer, view_offset
from ._storage import AFTER_DEVICE_SYNC
from .errors import *  # noqa: F403 - the errors, re-exported under their names
from .errors import BadLaunch, BufferExists, NotHostBacked

if TYPE_CHECKING:
    from ._array import HostPtrArray

# the functions of this module, then every name of hostarray.errors (one list, kept there)
__all__ = ["attach", "install", "of_numpy", "host_link", "HostLink", "publish_host_writes",
           "acquire_device_writes", "free_buffer", "queue", "cl_buffer", *errors.__all__]


@dataclass(frozen=True)
class HostLink:
    """How an array's buffer on a device relates to host memory.

    Attributes
    ----------
    kind : str
        ``"shared"`` (the device works on the host bytes), ``"mapped"`` (the
        driver mirrors them; publish/acquire copy) or ``"copied"`` (a plain
        device buffer kept in sync by copies).
    device : Device
        The device.
    address : int
        Address of the host bytes.
    nbytes : int
        Size of the buffer in bytes.

    Examples
    --------
    >>> import numpy as np, hostarray as ha
    >>> from hostarray import hostptr
    >>> gpu = [d for d in ha.devices() if d.framework == "opencl"][-1:]
    >>> for dev in gpu:                       # of_numpy attaches at once; its link:
    ...     y = hostptr.of_numpy(dev, np.zeros(64, np.float32))
    ...     link = hostptr.host_link(y, dev)
    ...     assert (link.device, link.nbytes) == (dev, 256)
    """

    kind: str
    device: Device
    address: int
    nbytes: int


def _array(x: Any, fn: str) -> HostPtrArray:
    """``x`` if it is a HostPtrArray, else the typed refusal saying what to pass."""
    from ._array import HostPtrArray

    if not isinstance(x, HostPtrArray):
        raise TypeError(f"hostptr.{fn} takes a HostPtrArray, not {type(x).__name__}; wrap "
                        f"numpy memory with ha.asarray(a) or hostptr.of_numpy(device, a)")
    return x


def attach(x: HostPtrArray, device: Device | str) -> HostLink:
    """Create ``x``'s buffer on ``device`` now, over ``x``'s host memory.

    Arrays attach lazily on first device use; call this to attach eagerly and
    see a refusal early.

    Raises
    ------
    Refused
        The device can't use this memory (``e.reason`` says why).
    BufferExists
        ``x`` already has a buffer on ``device``.
    NotHostBacked
        ``x``'s memory is not one contiguous range (a strided or reversed view).
    TypeError
        ``x`` is not a HostPtrArray.

    A view attaches its array's whole memory, after the checks a launch makes of that
    view: a view that does not start on the device's sub-buffer alignment is refused
    (``Refused``, ``e.reason.kind == "alignment"``).

    Examples
    --------
    >>> import hostarray as ha
    >>> from hostarray import hostptr
    >>> x = ha.zeros(1024, dtype=ha.float32)
    >>> gpu = ha.devices()[-1]
    >>> if gpu.framework == "opencl":
    ...     link = hostptr.attach(x, gpu)
    ...     assert link.kind in ("shared", "mapped", "copied")
    """
    x = _array(x, "attach")
    dev = _parse_device(device)
    a = x._a
    if not (x._covers_storage() and (a.flags.c_contiguous or a.flags.f_contiguous)):
        # a part of its array: the checks a launch or cl_buffer makes of that part
        # (NotHostBacked for a strided or reversed view, Refused for a misaligned start)
        view_offset(x, dev, "the view passed to attach")
    s = x._s
    with s.lock:
        if dev in s.buffers:
            raise BufferExists(id(x), dev)
        ensure_buffer(x, dev)
    return host_link(x, dev)  # type: ignore[return-value]  # not None: the buffer exists


def install(x: HostPtrArray, device: Device | str, host: np.ndarray) -> HostLink:
    """Create ``x``'s buffer on ``device`` over the numpy array ``host``.

    ``host`` is either exactly ``x``'s own memory (the same address and size, one
    contiguous range: then this is :func:`attach`), or memory apart from ``x``'s, which
    becomes ``x``'s: then ``host`` must have ``x``'s shape and dtype, ``x`` must cover
    its whole storage and have no device buffer, and ``x`` afterwards holds ``host``'s
    contents (views taken of ``x`` before keep the old memory).  Memory that already
    belongs to another array (an export of it) makes ``x`` share that array's state.
    ``host`` is the user's memory: while the user holds it, launches publish before and
    acquire after (see the coherence model).  The primitive under :func:`attach` and
    :func:`of_numpy`.

    Raises
    ------
    ValueError
        ``host`` overlaps ``x``'s memory without being exactly it, or has another shape
        or dtype.
    NotHostBacked
        ``host`` is not one contiguous range (a reversed or strided view).
    Refused, BufferExists
        As :func:`attach`.  Nothing changes when an error is raised.

    Examples
    --------
    >>> import numpy as np, hostarray as ha
    >>> from hostarray import hostptr
    >>> x = ha.zeros(256, dtype=ha.float32)
    >>> gpu = ha.devices()[-1]
    >>> if gpu.framework == "opencl":
    ...     _ = hostptr.install(x, gpu, np.asarray(x))
    """
    from ._array import _storage_for
    from ._sharing import byte_extent

    x = _array(x, "install")
    dev = _parse_device(device)
    if not isinstance(host, np.ndarray):
        raise TypeError(f"install takes a numpy array as host, not {type(host).__name__}")
    s = x._s
    lo, hi = byte_extent(host)
    slo, shi = byte_extent(s.base)
    if lo < shi and slo < hi:  # host overlaps x's memory
        one_range = host.flags.c_contiguous or host.flags.f_contiguous
        if one_range and (lo, hi) in ((slo, shi), byte_extent(x._a)) \
                and (x._a.flags.c_contiguous or (lo, hi) == (slo, shi)):
            return attach(x, dev)
        if not one_range:
            raise NotHostBacked(id(x), "host is a strided or reversed view of x's memory; "
                                       "pass np.asarray(x) to attach x's own memory")
        raise ValueError(f"host (bytes {lo:#x}..{hi:#x}) overlaps x's memory "
                         f"({slo:#x}..{shi:#x}) without being exactly it; pass np.asarray(x) "
                         f"to attach x's own memory, or separate memory (e.g. host.copy()) "
                         f"for x to take over")
    if host.shape != x.shape or host.dtype != x.dtype:
        raise ValueError(f"host has shape {host.shape} and dtype {host.dtype}; x needs "
                         f"{x.shape} and {x.dtype}")
    if s.buffers or not x._covers_storage():
        raise BufferExists(id(x), dev) if s.buffers else NotHostBacked(
            id(x), "a view can't take over new memory; install on the whole array")
    check_memory(host, dev, id(x))  # refused before anything changes
    found, view = _storage_for(host)
    check_storage(found, dev, id(x))
    if dev in found.buffers:  # host belongs to an array attached there already
        raise BufferExists(id(x), dev, "the memory given as host belongs to another array "
                           "that has a buffer there; free that array's buffer first "
                           "(hostptr.free_buffer(other, device)), or pass a copy (host.copy())")
    x._a, x._s, x._span = view, found, None  # the one place an array changes memory
    return attach(x, dev)


def of_numpy(device: Device | str, a: np.ndarray) -> HostPtrArray:
    """Wrap the numpy array ``a`` (no copy) and attach it to ``device``.

    Memory that already belongs to an array (``np.asarray(x)``, a DLPack export, memory
    adopted before) gives a view of that array's storage, sharing its state.  Other
    memory is the user's: while the user holds ``a``, launches publish before and
    acquire after (see the coherence model).

    Raises
    ------
    Refused
        The device can't use ``a``'s memory: ``e.reason.kind`` is ``"alignment"`` for an
        address that is not a multiple of ``max(device.host_alignment, a.itemsize)``
        (probed per device: 1 byte on Debian's PoCL and on NVIDIA's driver for an H200, so
        any element-aligned numpy array attaches), ``"size"`` for zero bytes or more than
        the device allows.
    NotHostBacked
        ``a`` is not one contiguous range.

    Examples
    --------
    >>> import numpy as np, hostarray as ha
    >>> from hostarray import hostptr
    >>> a = np.arange(8.0)                    # numpy's own memory
    >>> gpu = ha.devices()[-1]
    >>> if gpu.framework == "opencl":
    ...     x = hostptr.of_numpy(gpu, a)
    ...     assert np.shares_memory(np.asarray(x), a)
    """
    from ._array import _new, _storage_for

    dev = _parse_device(device)
    if not isinstance(a, np.ndarray):
        raise TypeError(f"of_numpy takes a numpy array, not {type(a).__name__}")
    if a.dtype.hasobject or a.dtype.fields is not None or a.dtype.kind in "USVMm":
        raise TypeError(f"dtype {a.dtype} can't be shared with a device; use a numeric dtype")
    check_memory(a, dev, id(a))  # a itself must be one buffer's worth: refused before any change
    s, view = _storage_for(a)
    x = _new(view, s, dev)
    ensure_buffer(x, dev)
    return x


def host_link(x: HostPtrArray, device: Device | str) -> HostLink | None:
    """How ``x``'s buffer on ``device`` relates to host memory; ``None`` without a buffer.

    Examples
    --------
    >>> import hostarray as ha
    >>> from hostarray import hostptr
    >>> hostptr.host_link(ha.zeros(4), "cpu") is None
    True
    """
    x = _array(x, "host_link")
    dev = _parse_device(device)
    buf = x._s.buffers.get(dev)
    if buf is None:
        return None
    return HostLink(buf.link, dev, x._s.address, buf.nbytes)


def publish_host_writes(x: HostPtrArray, device: Device | str) -> None:
    """Copy ``x``'s newest data into its buffer on ``device`` now (not at the next launch).

    Where ``x`` has a buffer on ``device``: one publish, of the bytes ``x`` covers (a
    view: only its part of the array).  Without a buffer there (:func:`attach` makes
    one), or for no bytes, it does nothing.  The newest data wins on every link: device
    writes not read back yet are kept (the host acquires them first), and so are the
    bytes an open :func:`cl_buffer` block on ``device`` holds (not published).  An explicit
    transfer: the transfer guard (:func:`hostarray.transfer_guard`) always allows it and
    does not log it.

    Examples
    --------
    >>> import hostarray as ha
    >>> from hostarray import hostptr
    >>> x = ha.zeros(256, dtype=ha.float32)
    >>> gpu = ha.devices()[-1]
    >>> if gpu.framework == "opencl":
    ...     _ = hostptr.attach(x, gpu)
    ...     x[...] = 1.0                        # a host write
    ...     hostptr.publish_host_writes(x, gpu)  # the device has it now, before any launch
    """
    x = _array(x, "publish_host_writes")
    with EXPLICIT:
        x._s.publish_explicit(_parse_device(device), x._a)


def acquire_device_writes(x: HostPtrArray, device: Device | str) -> None:
    """Make the writes of launches issued so far on ``device`` to ``x``'s bytes (a view:
    only its part of the array) visible on the host.

    A no-op when ``x``'s newest data is not on ``device``.  An explicit transfer: the
    transfer guard (:func:`hostarray.transfer_guard`) always allows it and does not log it.

    Examples
    --------
    >>> import hostarray as ha
    >>> from hostarray import hostptr
    >>> gpu = ha.devices()[-1]
    >>> if gpu.framework == "opencl":
    ...     x = ha.zeros(4, dtype=ha.float32)
    ...     prg = ha.Program("__kernel void one(__global float *x) { x[get_global_id(0)] = 1; }",
    ...                      device=gpu)
    ...     _ = prg.one(x.shape, x)
    ...     hostptr.acquire_device_writes(x, gpu)  # now, not at the first host read
    ...     with ha.transfer_guard("disallow"):
    ...         assert float(x[0]) == 1.0          # nothing left to move
    """
    x = _array(x, "acquire_device_writes")
    with EXPLICIT:
        x._s.acquire_explicit(_parse_device(device), x._a)


def free_buffer(x: HostPtrArray, device: Device | str) -> bool:
    """Free ``x``'s buffer on ``device``, acquiring first if it holds the newest
    data (nothing is lost).  Returns whether there was a buffer.

    A later launch re-creates the buffer.  Its acquire is explicit: the transfer guard
    (:func:`hostarray.transfer_guard`) always allows it and does not log it.

    Examples
    --------
    >>> import hostarray as ha
    >>> from hostarray import hostptr
    >>> x = ha.zeros(256, dtype=ha.float32)
    >>> gpu = ha.devices()[-1]
    >>> if gpu.framework == "opencl":
    ...     _ = hostptr.attach(x, gpu)
    ...     assert hostptr.free_buffer(x, gpu) and hostptr.host_link(x, gpu) is None
    """
    x = _array(x, "free_buffer")
    dev = _parse_device(device)
    with EXPLICIT:
        had = x._s.free_buffer(dev)
    # Every launch that used x on dev is finished now (free_buffer waited for them, or
    # they were known done).  The records of finished launches keep their storages alive
    # until the host next syncs with the device; a launch that only read x leaves nothing
    # to acquire, so without this, x's memory outlived free_buffer + del (issue 20).
    for hook in AFTER_DEVICE_SYNC:
        hook(dev)
    return had


def queue(device: Device | str) -> Any:
    """The in-order ``pyopencl.CommandQueue`` hostarray uses on ``device``.

    Raw pyopencl work on buffers from :func:`cl_buffer` must be enqueued here.

    Raises
    ------
    Refused
        ``device`` is the host (``e.reason.kind == "device_type"``), as for :func:`attach`.

    Examples
    --------
    >>> import hostarray as ha
    >>> from hostarray import hostptr
    >>> gpu = ha.devices()[-1]
    >>> if gpu.framework == "opencl":
    ...     q = hostptr.queue(gpu)
    ...     q.finish()                   # waits for everything hostarray enqueued there
    """
    return _parse_device(device).runtime.queue


class _RawUse:
    """Context manager behind :func:`cl_buffer`: a launch (:mod:`hostarray._launch`) whose
    enqueue is the raw code between its entry (:func:`~hostarray._launch.begin`: the
    protocol up to the enqueue) and its exit (its :func:`~hostarray._launch.record`, of a
    marker behind the raw code)."""

    def __init__(self, x: HostPtrArray, dev: Device, access: str) -> None:
        if access not in ("r", "w", "rw"):
            raise ValueError(f"access must be 'r', 'w' or 'rw', not {access!r}")
        self.x, self.dev, self.access = x, dev, access
        self.held_newest = False
        self.span = (0, 0)
        self.buf: Any = None  # the buffer whose (sub-)buffer the block holds

    def __enter__(self) -> Any:
        from ._launch import begin

        x, s, a, dev = self.x, self.x._s, self.x._a, self.dev
        # refused before anything is created or published (a refused call changes nothing)
        off = view_offset(x, dev, "the array given to cl_buffer")
        if "w" in self.access and not a.flags.writeable:
            raise BadLaunch("cl_buffer", f"the array is read-only but access {self.access!r} "
                                         f"lets the device write it; use access='r'")
        self.span = (off, off + a.nbytes)  # the bytes the block may touch
        self.buf = None
        try:
            return self._begin(begin, x, s, a, dev, off)
        except BaseException as e:
            # a callback run as the lock was let go (a transfer-guard log handler) raised
            # after the block began: it ends as if its body had raised, not left open
            # (every later host write to its bytes was refused)
            if self.buf is not None:
                self.__exit__(type(e), e, e.__traceback__)
            raise

    def _begin(self, begin: Any, x: HostPtrArray, s: Any, a: Any, dev: Device,
               off: int) -> Any:
        with s.lock:
            # refused where an open writing block elsewhere, or one on dev whose buffer was
            # let go, is in the way (InUse), or where another open block's sub-buffer would
            # be retired under its feet (BadLaunch); the buffer made under the lock (a
            # free_buffer can't slip in); published unless write-only ("w": the block
            # overwrites the whole range); the handle held (a launch can't retire it)
            handle, self.buf = begin(dev, (s, *self.span, self.access), (x, off, a.nbytes),
                                     "a cl_buffer block")
            # whether the buffer holds the newest data when the block starts (see __exit__)
            self.held_newest = s.is_current(dev, *self.span)
            if "w" in self.access:
                # until the block ends, writes to these bytes from the host or another
                # device are refused (InUse): the block's writes land at the end
                s.open_raw_block(dev, *self.span)
        return handle

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        import pyopencl as cl

        from ._launch import record

        s = self.x._s
        marker = self.dev.runtime.last_event = cl.enqueue_marker(self.dev.runtime.queue)
        off, end = self.span
        self.buf.raw_done(off, end - off, marker)  # launches may retire it once it is done
        discard = exc_type is not None and "w" in self.access and not self.held_newest
        with s.lock:  # one hold: another thread's free_buffer can't come in between
            detached = s.buffers.get(self.dev) is not self.buf
            if "w" in self.access:
                s.end_raw_block(self.dev, off, end, detached)
            if detached:
                # hostptr.free_buffer let go of the buffer while the block ran: what the
                # block wrote is in that buffer alone, so the host takes it (nothing is
                # lost) instead of recording a device that has no buffer any more
                if "w" in self.access and not discard:
                    s.take_detached_writes(self.buf, off, end)
            elif discard:
                # the block raised over a buffer that held no valid data (a write-only use
                # skips the publish): what it enqueued is partial at best, and the rest is
                # uninitialised, so the host keeps its data.  Where the buffer held the
                # newest data, what the block enqueued before raising is kept, as on a
                # shared link, where it lands in host memory anyway.
                s.discard_raw_use(self.dev, marker, off, end)  # only the block's bytes
            else:
                record(self.dev, marker, [(s, off, end, self.access)])


def cl_buffer(x: HostPtrArray, device: Device | str, access: str = "rw") -> _RawUse:
    """Hand ``x``'s ``pyopencl.Buffer`` on ``device`` to raw pyopencl code.

    Use as a context manager; enqueue on :func:`queue` inside it.  On entry
    the host's writes are published (``access`` ``"r"``/``"rw"``); on exit the
    device is recorded as reader or writer, so the host acquires lazily.

    A write-only use (``"w"``) publishes nothing: the block must overwrite
    every byte of ``x``.

    While a block that may write (``"w"``, ``"rw"``) is open, its bytes are the raw
    code's: a write to them from the host or from a launch on another device raises
    :class:`~hostarray.errors.InUse` (the block's writes land when it ends, over its
    whole range, so such a write would be lost); kernel launches (and operations the
    device computes) and nested blocks on the block's own device are ordered by its
    queue and allowed: they read what the raw code wrote (nothing is published over the
    block's bytes there, :func:`publish_host_writes` included).  If :func:`free_buffer`
    lets go of the buffer meanwhile, the raw code's bytes are in that buffer alone until
    the block ends: accesses from its device raise ``InUse`` too.  Reads are allowed
    everywhere; an operation placed on the host reads the host's bytes.  Not checked
    against the block (hostarray can't see them): writes through a raw numpy view
    (``np.asarray(x)``) and through another array over memory that only partly overlaps
    ``x``'s (adopted separately, see :doc:`/coherence`).

    If the block raises, the work it enqueued is waited for.  Where the buffer
    held the newest bytes of ``x`` on entry (``"r"``, ``"rw"``), what it wrote
    is kept, as a launch's would be.  A write-only use over bytes the buffer
    did not hold (no publish on entry) leaves the array as it was on a mapped
    or copied link; on a shared link the device works on the host bytes, so
    what the block wrote before raising is there.  If :func:`free_buffer` lets go
    of the buffer while the block runs, the host takes what the block wrote when
    it ends.

    Examples
    --------
    >>> import hostarray as ha
    >>> from hostarray import hostptr
    >>> gpu = ha.devices()[-1]
    >>> x = ha.zeros(16, dtype=ha.float32)
    >>> if gpu.framework == "opencl":
    ...     import pyopencl as cl
    ...     with hostptr.cl_buffer(x, gpu, "w") as buf:
    ...         _ = cl.enqueue_fill_buffer(hostptr.queue(gpu), buf, ha.float32.type(2), 0, 64)
    ...     assert float(x[3]) == 2.0
    """
    return _RawUse(_array(x, "cl_buffer"), _parse_device(device), access)
