"""The array object: ``HostPtrArray``.

A ``HostPtrArray`` is a numpy view (``_a``) over a
:class:`~hostarray._storage.Storage` (``_s``) plus the device it is attached
to (``_device``).  Every host read goes through :meth:`HostPtrArray._host`
(one flag test when nothing has to move), every host write is a transaction,
:meth:`HostPtrArray._writing` (see :meth:`Storage.host_write`).  The object never calls pyopencl.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _sharing
from ._devices import HOST, Device
from ._devices import device as _parse_device
from ._storage import HostWrite, Storage, address_of, aligned_empty, locked

__all__ = ["HostPtrArray", "wrap", "aligned_copy", "host_view"]


class _ExportHolder:
    """Base object of raw numpy views handed out by ``__array__``.

    numpy collapses chains of view bases onto the first non-ndarray base, so
    every view derived from an export keeps this holder alive: when it dies,
    the last raw view died.
    """

    __slots__ = ("__array_interface__", "_keep", "_storage")

    def __init__(self, a: np.ndarray, storage: Storage) -> None:
        self.__array_interface__ = a.__array_interface__
        self._keep = a
        self._storage: Storage | None = None
        storage.begin_escape()  # may raise (a failed launch): then no escape began
        self._storage = storage

    def __del__(self) -> None:
        # cheaper than weakref.finalize, and runs as soon as the last view dies
        if self._storage is not None:
            self._storage.end_escape()


class HostPtrArray:
    """An n-dimensional array in page-aligned host memory that OpenCL devices
    can use without copies.

    Create one with :func:`hostarray.asarray`, :func:`hostarray.empty`,
    :func:`hostarray.zeros` or any other creation function; it is not meant
    to be constructed directly.

    Examples
    --------
    >>> import hostarray as ha
    >>> x = ha.asarray([1.0, 2.0, 3.0])
    >>> x.shape, x.dtype, x.device
    ((3,), dtype('float64'), Device('cpu'))
    """

    __slots__ = ("_a", "_s", "_device", "__weakref__")
    __array_priority__ = 30  # numpy defers binary operators to us
    _a: np.ndarray  # the elements: a numpy view over the storage
    _s: Storage  # the memory and its coherence state
    _device: Device  # the device the array is attached to

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("HostPtrArray is not constructed directly; use ha.asarray, "
                        "ha.empty or another creation function")

    # -- coherence hooks ---------------------------------------------------------
    def _host(self) -> np.ndarray:
        """The numpy view for a host read (acquires first if a device is newer).

        Internal: the view must not outlive the operation (it is not an escape)."""
        s = self._s
        if s.host_stale:
            s.sync_for_host_read()
        return self._a

    def _writing(self, whole: bool = False) -> HostWrite:
        """A host write transaction: ``with x._writing() as a: a[...] = v``.

        ``whole``: the write overwrites every element of ``x`` with a value
        evaluated beforehand, so stale device data need not be acquired (only
        honoured when ``x`` covers its whole storage).  A write that raises
        leaves the newest data where it was (see :meth:`Storage.host_write`)."""
        s, a = self._s, self._a
        # a contiguous view as large as its storage covers all of it (a broadcast or
        # sliding-window view of the same byte count does not)
        whole = whole and a.nbytes == s.nbytes and (a.flags.c_contiguous or a.flags.f_contiguous)
        return s.host_write(whole, a)

    def _covers_storage(self) -> bool:
        return self._a.nbytes == self._s.nbytes

    # -- attributes ----------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """Array dimensions."""
        return self._a.shape

    @property
    def dtype(self) -> np.dtype:
        """Data type of the elements."""
        return self._a.dtype

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return self._a.ndim

    @property
    def size(self) -> int:
        """Number of elements."""
        return self._a.size

    @property
    def nbytes(self) -> int:
        """Bytes of the elements (not counting the storage's padding)."""
        return self._a.nbytes

    @property
    def device(self) -> Device:
        """The device the array is attached to (``Device('cpu')`` for the host)."""
        return self._device

    @property
    def T(self) -> HostPtrArray:
        """Transpose of a two-dimensional array (a view)."""
        if self._a.ndim != 2:
            raise ValueError("x.T requires a 2-D array; use x.mT or ha.permute_dims for others")
        return _view(self, self._a.T)

    @property
    def mT(self) -> HostPtrArray:
        """Transpose of the last two axes (a view)."""
        if self._a.ndim < 2:
            raise ValueError("x.mT requires at least 2 dimensions")
        return _view(self, self._a.swapaxes(-1, -2))

    # -- devices ---------------------------------------------------------------------
    def to_device(self, device: Device | str, /, *, stream: Any = None) -> HostPtrArray:
        """The same data on ``device``, over the same memory where the device can use it
        (one contiguous range, aligned to ``max(device.host_alignment, itemsize)``; else a
        copy into page-aligned storage).

        Attaching is lazy: the device buffer is created on first device use.

        Examples
        --------
        >>> import hostarray as ha
        >>> x = ha.zeros(4)
        >>> x.to_device("cpu").device
        Device('cpu')
        """
        if stream is not None:
            raise ValueError("hostarray has no streams; pass stream=None")
        dev = _parse_device(device)
        if dev == self._device:
            return self
        if dev.framework == "host" or _sharing.copy_needed(self._s.base, dev) is None:
            return _view(self, self._a, dev)
        return wrap(aligned_copy(self._host()), dev)

    # -- numpy protocol ------------------------------------------------------------
    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """numpy's view of the data (an escape: see the coherence model), or a copy."""
        return _interop.array(self, dtype, copy)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return _interop.array_ufunc(self, ufunc, method, *inputs, **kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return _interop.array_function(self, func, types, args, kwargs)

    def __dlpack__(self, /, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """Export as a DLPack capsule (host memory, acquired first; see ``ha.from_dlpack``).

        Without ``copy=True`` the consumer shares the memory and may write it: the
        array counts as escaped while the consumer holds it."""
        return _interop.dlpack(self, stream=stream, max_version=max_version,
                               dl_device=dl_device, copy=copy)

    def __dlpack_device__(self, /) -> tuple[int, int]:
        """``(1, 0)``: DLPack's ``kDLCPU``; the data is always in host memory."""
        return _interop.dlpack_device(self)

    # -- array API: namespace and conversions to Python scalars ------------------------------
    # The arithmetic, comparison and bitwise operators (with their reflected and in-place
    # forms) are installed by hostarray._api.elementwise from the same table as the
    # namespace's element-wise functions.
    def __array_namespace__(self, /, *, api_version: str | None = None) -> Any:
        """The ``hostarray`` module: this array's array API namespace.

        Examples
        --------
        >>> import hostarray as ha
        >>> ha.zeros(1).__array_namespace__() is ha
        True
        """
        if api_version is not None and api_version not in _API_VERSIONS:
            raise ValueError(f"hostarray implements array API versions {_API_VERSIONS}, "
                             f"not {api_version!r}")
        import hostarray
        return hostarray

    def __bool__(self, /) -> bool:
        return bool(self._host())

    def __int__(self, /) -> int:
        return int(self._host())

    def __float__(self, /) -> float:
        return float(self._host())

    def __complex__(self, /) -> complex:
        return complex(self._host())

    def __index__(self, /) -> int:
        a = self._host()
        if a.dtype.kind not in "iu":
            raise TypeError(f"only integer arrays can be used as an index, not {a.dtype}")
        return a.__index__()

    # -- Python conveniences, pickling, copies ------------------------------------------------
    def __len__(self) -> int:
        return _interop.length(self)

    def __iter__(self) -> Any:
        return _interop.iterate(self)

    def __contains__(self, value: Any) -> bool:
        return _interop.contains(self, value)

    def __format__(self, format_spec: str) -> str:
        return _interop.format_array(self, format_spec)

    def __reduce__(self) -> tuple[Any, ...]:
        return _interop.reduce(self)

    def __copy__(self) -> HostPtrArray:
        return _interop.copy(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> HostPtrArray:
        return _interop.deepcopy(self, memo)

    def tolist(self) -> Any:
        """The elements as nested Python lists of Python scalars (as ``numpy.ndarray.tolist``).

        Examples
        --------
        >>> import hostarray as ha
        >>> ha.asarray([[1, 2], [3, 4]]).tolist()
        [[1, 2], [3, 4]]
        """
        return self._host().tolist()

    def item(self, *args: Any) -> Any:
        """One element as a Python scalar (as ``numpy.ndarray.item``).

        Examples
        --------
        >>> import hostarray as ha
        >>> ha.asarray([1.5, 2.5]).item(1)
        2.5
        """
        return self._host().item(*args)

    # -- indexing ---------------------------------------------------------------------
    def __getitem__(self, key: Any, /) -> HostPtrArray:
        t = type(key)
        if t in _BASIC or (t is tuple and all(type(k) in _BASIC for k in key)):
            # basic indexing: numpy answers with a view, which reads nothing (no acquire),
            # or a scalar for a full integer index, which reads the element
            s = self._s
            r = self._a[key]
            if type(r) is np.ndarray:
                return _new(r, s, self._device)
            if s.host_stale:
                s.sync_for_host_read()
                r = self._a[key]
            return wrap(np.asarray(r), self._device)
        key = _numpy_key(key)
        r = self._host()[key]
        if isinstance(r, np.ndarray) and r.base is not None and np.may_share_memory(r, self._a):
            return _view(self, r)
        return wrap(np.asarray(r), self._device)

    def __setitem__(self, key: Any, value: Any, /) -> None:
        if not self._a.flags.writeable:  # refused before the coherence state is touched
            raise ValueError("this array is over read-only memory (np.frombuffer on bytes, a "
                             "read-only numpy array); write to ha.asarray(x, copy=True)")
        key = _numpy_key(key)
        if not (type(value) in _EVALUATED or isinstance(value, _VALUES)):
            # arrays in a list are read, and objects numpy converts by calling back into
            # Python are converted, here, before this storage's lock is taken: a callback
            # reading another array would take its lock out of the global order (a
            # deadlock with a launch using both)
            value = _host_values(value)
        # the acquire is skipped for a whole overwrite only when the value can neither fail
        # to convert half-way (an object array, a list) nor read this array late
        whole = _is_whole(key) and (type(value) in _EVALUATED or isinstance(value, HostPtrArray)
                                    or (isinstance(value, (np.ndarray, np.generic))
                                        and not value.dtype.hasobject))
        # both storages' locks in the one global order when the value is an array: its
        # read may acquire (another thread writing it from this array must not deadlock)
        with locked((self._s, value._s)) if isinstance(value, HostPtrArray) else self._s.lock:
            v = value._host() if isinstance(value, HostPtrArray) else value
            with self._writing(whole) as a:
                a[key] = v

    # -- printing ---------------------------------------------------------------------
    def __repr__(self) -> str:
        body = np.array2string(self._host(), separator=", ", prefix="HostPtrArray(")
        extra = "" if self._device.framework == "host" else f", device={str(self._device)!r}"
        return f"HostPtrArray({body}, dtype={self.dtype.name}{extra})"

    def __str__(self) -> str:
        return str(self._host())


# -- construction helpers used across the package ------------------------------------------

def _new(a: np.ndarray, s: Storage, device: Device) -> HostPtrArray:
    obj = object.__new__(HostPtrArray)
    obj._a = a
    obj._s = s
    obj._device = device
    return obj


def _view(x: HostPtrArray, a: np.ndarray, device: Device | None = None) -> HostPtrArray:
    """A view of ``x``'s storage (same coherence state)."""
    return _new(a, x._s, x._device if device is None else device)


def _shareable(s: Storage, dev: Device) -> bool:
    """Whether ``dev`` may get a buffer over ``s``'s memory (see :mod:`hostarray._sharing`)."""
    return _sharing.memory_fault(s.base, dev, 0) is None


def aligned_copy(a: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of ``a`` in page-aligned storage."""
    out = aligned_empty(a.nbytes).view(a.dtype).reshape(a.shape)
    np.copyto(out, a, casting="no")
    return out


def aligned_zeros(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    out = aligned_empty(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
    out.fill(0)
    return out.view(dtype).reshape(shape)


def wrap(a: np.ndarray, device: Device = HOST) -> HostPtrArray:
    """A new ``HostPtrArray`` owning the fresh numpy result ``a`` (no copy on the
    host; on a device, a copy into aligned storage if ``a``'s memory can't be shared).

    Only for memory nobody else holds: memory the user handed in goes through
    :func:`adopt`."""
    if type(a) is not np.ndarray:
        a = np.asarray(a)
    if device is not HOST and device.framework != "host" \
            and _sharing.copy_needed(a, device) is not None:
        a = aligned_copy(a)
    return _new(a, Storage(a), device)


def _storage_for(a: np.ndarray) -> tuple[Storage, np.ndarray]:
    """The storage for the numpy array ``a`` the user hands in, and ``a``'s elements as a
    view over it.

    Memory that lies in a live storage (an export's own, or one the registry knows:
    adopted, exported or attached before) gives that storage — one memory range, one
    coherence state — and a view built over its own memory, not over ``a`` (read-only
    where ``a`` is).  Other memory gets a new storage over ``a`` itself (no copy; escaped
    while the user holds ``a``), registered."""
    base = a.base
    if type(base) is _ExportHolder:
        s = base._storage
        return s, _sharing.view_within(s, a, _writeable(a, s))
    new = Storage.over_user_memory(a)
    iface = new.user.__array_interface__  # type: ignore[union-attr]  # computed once, for both questions below
    addr = iface["data"][0]
    lo, hi = _sharing.extent(addr, a.shape, iface["strides"], a.itemsize)
    s = _sharing.find_range(lo, hi)
    if s is not None:
        return s, _sharing.view_within(s, a, _writeable(a, s), addr)
    _sharing.register(new, lo, hi)
    return new, new.base


def _writeable(a: np.ndarray, s: Storage) -> bool:
    return bool(a.flags.writeable and s.base.flags.writeable)


def adopt(a: np.ndarray, device: Device, copy: bool | None,
          error: type[Exception] = ValueError) -> HostPtrArray:
    """A ``HostPtrArray`` over the numpy array ``a`` on ``device``: ``a``'s own memory
    where the device can use it, else a copy into aligned storage (``copy=False``:
    raise ``error`` instead).

    Memory that lies in a live storage (an export of a ``HostPtrArray``, memory adopted
    before) gives a view of that storage: one memory range has one coherence state.
    Other memory becomes a storage over the user's array, escaped while the user holds
    it (see the coherence model)."""
    s, v = _storage_for(a)
    if device.framework != "host":
        fault = _sharing.copy_needed(s.base, device)
        if fault is not None:
            if copy is False:
                raise error(f"the memory at {address_of(a):#x} can't be shared with {device} "
                            f"without a copy ({_sharing.why_copy(fault)}); pass copy=None to "
                            f"copy it into aligned storage")
            s.sync_for_host_read()
            return wrap(aligned_copy(v), device)
    return _new(v, s, device)


def host_view(x: HostPtrArray) -> np.ndarray:
    """A raw numpy view of ``x`` that may be kept and written: an *escape*.

    While any view derived from it lives, launches publish before and acquire
    after (see the coherence model)."""
    s = x._s
    _sharing.register(s)  # ha.asarray / ha.from_dlpack of what derives from it find s
    return np.asarray(_ExportHolder(x._a, s))


_API_VERSIONS = ("2023.12", "2024.12", "2025.12")
_EVALUATED = frozenset((int, float, complex, bool))  # write values numpy reads at once
_VALUES = (np.ndarray, np.generic, HostPtrArray)
_BASIC = frozenset((int, slice, type(None), type(Ellipsis)))  # index parts that give views


def _host_values(v: Any) -> Any:
    """``v`` with every HostPtrArray in nested lists and tuples replaced by its host data,
    and every other object with ``__array__`` converted by numpy (its callback run now)."""
    t = type(v)
    if t is list or t is tuple:
        return t(_host_values(i) for i in v)
    if isinstance(v, HostPtrArray):
        return v._host()
    if t in _EVALUATED or isinstance(v, (np.ndarray, np.generic)):
        return v
    if hasattr(t, "__array__"):
        return np.asarray(v)
    return v


def _numpy_key(key: Any) -> Any:
    """Index key with HostPtrArrays replaced by their host numpy arrays."""
    if isinstance(key, HostPtrArray):
        return key._host()
    if isinstance(key, tuple):
        return tuple(k._host() if isinstance(k, HostPtrArray) else k for k in key)
    return key


def _is_whole(key: Any) -> bool:
    """Whether an index key selects every element (``...``, ``:`` or ``()`` parts only)."""
    if key is Ellipsis or (isinstance(key, slice) and key == slice(None)):
        return True
    if isinstance(key, tuple):
        return all(k is Ellipsis or (isinstance(k, slice) and k == slice(None)) for k in key)
    return False


from . import _interop  # noqa: E402  (it builds on the names above; it also adds
#                                    numpy ndarray methods such as x.reshape and x.sum)
