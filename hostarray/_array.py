# Over 700 lines: one class, the key handling of its indexing, ~120 generated declarations.
"""The array object, ``HostPtrArray``: its data, and the methods that move or read it.

A ``HostPtrArray`` is a numpy view (``_a``) over a
:class:`~hostarray._storage.Storage` (``_s``) plus the device it is attached
to (``_device``).  Every host read goes through :meth:`HostPtrArray._host`
(one flag test when nothing has to move), every host write is a transaction,
:meth:`HostPtrArray._writing` (see :meth:`Storage.host_write`).  The object never calls
pyopencl.

This module is the array's lower half: attributes, ``to_device``, indexing, the host
write of ``x[key] = value``, numpy's view (``__array__``), DLPack export, pickling,
iteration and formatting, and the helpers that make arrays (:func:`_new`, the one
constructor; :func:`wrap`, :func:`adopt`, :func:`_view`).  Everything that computes
(the operators, ``__array_ufunc__``, ``__array_function__``, the ndarray-style methods,
the device write of ``x[key] = value``, copies) is :class:`hostarray._methods.ArrayMethods`,
a layer above the namespace, attached to the class once when ``hostarray`` is imported;
this module imports nothing above it but the namespace itself, in
:meth:`HostPtrArray.__array_namespace__`.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar, SupportsIndex

import numpy as np

from . import _sharing
from ._devices import HOST, Device
from ._devices import device as _parse_device
from ._storage import HostWrite, Storage, address_of, aligned_empty, locked
from .errors import HostPtrError

__all__ = ["HostPtrArray", "wrap", "aligned_copy", "adopt", "host_view", "reduce"]

KDL_CPU = 1  # DLPack's device type for host memory

if TYPE_CHECKING:
    from typing import TypeAlias

    # what the operators take (numpy arrays and scalars too: without them a checker would
    # fall back on numpy's reflected operator and say ndarray), and what numpy-style
    # reductions give (a full reduction gives a numpy scalar, as in numpy)
    _Operand: TypeAlias = "HostPtrArray | bool | int | float | complex | np.ndarray | np.generic"
    _Reduced: TypeAlias = "HostPtrArray | np.generic"
    _Axis: TypeAlias = "int | tuple[int, ...] | None"


class _ExportHolder:
    """Base object of raw numpy views handed out by ``__array__``.

    numpy collapses chains of view bases onto the first non-ndarray base, so
    every view derived from an export keeps this holder alive: when it dies,
    the last raw view died.
    """

    __slots__ = ("__array_interface__", "_keep", "_storage", "_range")

    def __init__(self, a: np.ndarray, storage: Storage) -> None:
        self.__array_interface__ = a.__array_interface__
        self._keep = a
        self._storage: Storage | None = None
        # only the exported view's bytes escape; may raise (a failed launch): then no
        # escape began
        self._range = storage.begin_escape(a)
        self._storage = storage

    def __del__(self) -> None:
        # cheaper than weakref.finalize, and runs as soon as the last view dies
        if self._storage is not None:
            self._storage.end_escape(*self._range)


def _is_view(target: np.ndarray | None, v: np.ndarray) -> bool:
    """Whether ``target`` views exactly the elements of ``v`` (the same bytes, type,
    shape and strides)."""
    return (target is not None and target.shape == v.shape and target.strides == v.strides
            and target.dtype == v.dtype
            and target.__array_interface__["data"][0] == v.__array_interface__["data"][0])


class HostPtrArray:
    """An n-dimensional array in page-aligned host memory that OpenCL devices
    can use without copies.

    Create one with :func:`hostarray.asarray`, :func:`hostarray.empty`,
    :func:`hostarray.zeros` or any other creation function; it is not meant
    to be constructed directly.

    Attributes
    ----------
    shape : tuple of int
        The length of each axis.
    dtype : numpy.dtype
        The data type of the elements.
    device : Device
        Where the array lives: the host or the OpenCL device kernels use it on.
    ndim, size, nbytes, T, mT
        As the standard (and numpy) define them: see each entry below.

    Examples
    --------
    >>> import hostarray as ha
    >>> x = ha.asarray([1.0, 2.0, 3.0])
    >>> x.shape, x.dtype, x.device
    ((3,), dtype('float64'), Device('cpu'))
    """

    __slots__ = ("_a", "_s", "_device", "_span", "__weakref__")
    __array_priority__ = 30  # numpy defers binary operators to us
    _a: np.ndarray  # the elements: a numpy view over the storage
    _s: Storage  # the memory and its coherence state
    _device: Device  # the device the array is attached to
    _span: tuple[int, int, int] | None  # see _bytes(): computed on first use

    def _bytes(self) -> tuple[int, int, int]:
        """``(first, lo, hi)``: the offset of the first element in the storage's bytes and
        the range ``[lo, hi)`` the elements cover.  Computed once: a view's address,
        shape and strides never change, and ``_a`` is rebound only by
        :func:`hostarray.hostptr.install`, which forgets the span."""
        span = self._span
        if span is None:
            a = self._a
            base = self._s.address
            first = address_of(a)
            lo, hi = _sharing.extent(first, a.shape, a.strides, a.itemsize)
            if hi > lo and (lo < base or hi > base + self._s.nbytes):
                # a view built over other memory: the device path would read and write
                # outside the allocation (garbage, heap corruption)
                raise RuntimeError("hostarray: internal error: an array whose elements lie "
                                   "outside its storage; please report it")
            span = self._span = (first - base, lo - base, hi - base)
        return span

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("HostPtrArray is not constructed directly; use ha.asarray, "
                        "ha.empty or another creation function")

    # The computing methods are hostarray._methods.ArrayMethods', attached to this class once
    # (at ``import hostarray``); their declarations for type checkers, written from it:
    # BEGIN GENERATED by scripts/gen_stubs.py: do not edit (tests/test_typing.py checks)
    if TYPE_CHECKING:
        # operators: the element-wise functions' (hostarray._api.elementwise.TABLE)
        def __abs__(self, /) -> HostPtrArray: ...
        def __add__(self, other: _Operand, /) -> HostPtrArray: ...
        def __radd__(self, other: _Operand, /) -> HostPtrArray: ...
        def __iadd__(self, other: _Operand, /) -> HostPtrArray: ...
        def __and__(self, other: _Operand, /) -> HostPtrArray: ...
        def __rand__(self, other: _Operand, /) -> HostPtrArray: ...
        def __iand__(self, other: _Operand, /) -> HostPtrArray: ...
        def __lshift__(self, other: _Operand, /) -> HostPtrArray: ...
        def __rlshift__(self, other: _Operand, /) -> HostPtrArray: ...
        def __ilshift__(self, other: _Operand, /) -> HostPtrArray: ...
        def __invert__(self, /) -> HostPtrArray: ...
        def __or__(self, other: _Operand, /) -> HostPtrArray: ...
        def __ror__(self, other: _Operand, /) -> HostPtrArray: ...
        def __ior__(self, other: _Operand, /) -> HostPtrArray: ...
        def __rshift__(self, other: _Operand, /) -> HostPtrArray: ...
        def __rrshift__(self, other: _Operand, /) -> HostPtrArray: ...
        def __irshift__(self, other: _Operand, /) -> HostPtrArray: ...
        def __xor__(self, other: _Operand, /) -> HostPtrArray: ...
        def __rxor__(self, other: _Operand, /) -> HostPtrArray: ...
        def __ixor__(self, other: _Operand, /) -> HostPtrArray: ...
        def __truediv__(self, other: _Operand, /) -> HostPtrArray: ...
        def __rtruediv__(self, other: _Operand, /) -> HostPtrArray: ...
        def __itruediv__(self, other: _Operand, /) -> HostPtrArray: ...
        def __eq__(self, other: object, /) -> HostPtrArray: ...  # type: ignore[override]
        def __floordiv__(self, other: _Operand, /) -> HostPtrArray: ...
        def __rfloordiv__(self, other: _Operand, /) -> HostPtrArray: ...
        def __ifloordiv__(self, other: _Operand, /) -> HostPtrArray: ...
        def __gt__(self, other: _Operand, /) -> HostPtrArray: ...
        def __ge__(self, other: _Operand, /) -> HostPtrArray: ...
        def __lt__(self, other: _Operand, /) -> HostPtrArray: ...
        def __le__(self, other: _Operand, /) -> HostPtrArray: ...
        def __mul__(self, other: _Operand, /) -> HostPtrArray: ...
        def __rmul__(self, other: _Operand, /) -> HostPtrArray: ...
        def __imul__(self, other: _Operand, /) -> HostPtrArray: ...
        def __neg__(self, /) -> HostPtrArray: ...
        def __ne__(self, other: object, /) -> HostPtrArray: ...  # type: ignore[override]
        def __pos__(self, /) -> HostPtrArray: ...
        def __pow__(self, other: _Operand, /) -> HostPtrArray: ...
        def __rpow__(self, other: _Operand, /) -> HostPtrArray: ...
        def __ipow__(self, other: _Operand, /) -> HostPtrArray: ...
        def __mod__(self, other: _Operand, /) -> HostPtrArray: ...
        def __rmod__(self, other: _Operand, /) -> HostPtrArray: ...
        def __imod__(self, other: _Operand, /) -> HostPtrArray: ...
        def __sub__(self, other: _Operand, /) -> HostPtrArray: ...
        def __rsub__(self, other: _Operand, /) -> HostPtrArray: ...
        def __isub__(self, other: _Operand, /) -> HostPtrArray: ...
        def __matmul__(self, other: _Operand, /) -> HostPtrArray: ...
        def __rmatmul__(self, other: _Operand, /) -> HostPtrArray: ...
        def __imatmul__(self, other: _Operand, /) -> HostPtrArray: ...
        __hash__: ClassVar[None]  # type: ignore[assignment]  # mutable
        # the other methods of hostarray._methods.ArrayMethods
        def __divmod__(self, other: _Operand, /) -> tuple[HostPtrArray, HostPtrArray]: ...
        def __rdivmod__(self, other: _Operand, /) -> tuple[HostPtrArray, HostPtrArray]: ...
        def __round__(self, ndigits: int | None = ...) -> Any: ...
        def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any,
                            **kwargs: Any) -> Any: ...
        def __array_function__(self, func: Callable[..., Any], types: tuple[type, ...],
                               args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any: ...
        def _write_on_device(self, key: Any, value: Any) -> bool: ...
        def __copy__(self) -> HostPtrArray: ...
        def __deepcopy__(self, memo: dict[int, Any]) -> HostPtrArray: ...
        # numpy's ndarray methods and attributes (hostarray._methods)
        def reshape(self, *shape: int | tuple[int, ...], order: str = ...,
                    copy: bool | None = ...) -> HostPtrArray: ...
        def transpose(self, *axes: int | tuple[int, ...] | None) -> HostPtrArray: ...
        def swapaxes(self, axis1: int, axis2: int) -> HostPtrArray: ...
        def squeeze(self, axis: int | tuple[int, ...] | None = ...) -> HostPtrArray: ...
        def ravel(self, order: str = ...) -> HostPtrArray: ...
        def flatten(self, order: str = ...) -> HostPtrArray: ...
        def astype(self, dtype: Any, /, *, copy: bool = ..., device: Any = ...) -> HostPtrArray: ...
        def copy(self, order: str = ...) -> HostPtrArray: ...
        def view(self, dtype: Any = ...) -> HostPtrArray: ...
        def sort(self, axis: int = ..., kind: str | None = ..., order: Any = ..., *,
                 stable: bool | None = ...) -> None: ...
        def fill(self, value: Any) -> None: ...
        def sum(self, axis: _Axis = ..., *args: Any, **kwargs: Any) -> _Reduced: ...
        def prod(self, axis: _Axis = ..., *args: Any, **kwargs: Any) -> _Reduced: ...
        def mean(self, axis: _Axis = ..., *args: Any, **kwargs: Any) -> _Reduced: ...
        def std(self, axis: _Axis = ..., *args: Any, **kwargs: Any) -> _Reduced: ...
        def var(self, axis: _Axis = ..., *args: Any, **kwargs: Any) -> _Reduced: ...
        def min(self, axis: _Axis = ..., *args: Any, **kwargs: Any) -> _Reduced: ...
        def max(self, axis: _Axis = ..., *args: Any, **kwargs: Any) -> _Reduced: ...
        def argmin(self, axis: int | None = ..., *args: Any, **kwargs: Any) -> _Reduced: ...
        def argmax(self, axis: int | None = ..., *args: Any, **kwargs: Any) -> _Reduced: ...
        def any(self, axis: _Axis = ..., *args: Any, **kwargs: Any) -> _Reduced: ...
        def all(self, axis: _Axis = ..., *args: Any, **kwargs: Any) -> _Reduced: ...
        def cumsum(self, axis: int | None = ..., *args: Any, **kwargs: Any) -> HostPtrArray: ...
        def cumprod(self, axis: int | None = ..., *args: Any, **kwargs: Any) -> HostPtrArray: ...
        def clip(self, min: Any = ..., max: Any = ..., *args: Any,
                 **kwargs: Any) -> HostPtrArray: ...
        def round(self, decimals: int = ..., *args: Any, **kwargs: Any) -> _Reduced: ...
        def dot(self, b: Any, /, *args: Any, **kwargs: Any) -> _Reduced: ...
        def nonzero(self) -> tuple[HostPtrArray, ...]: ...
        def argsort(self, axis: int | None = ..., *args: Any, **kwargs: Any) -> HostPtrArray: ...
        def searchsorted(self, v: Any, side: str = ..., sorter: Any = ...) -> _Reduced: ...
        def take(self, indices: Any, axis: int | None = ..., *args: Any,
                 **kwargs: Any) -> _Reduced: ...
        def repeat(self, repeats: Any, axis: int | None = ...) -> HostPtrArray: ...
        def diagonal(self, offset: int = ..., axis1: int = ...,
                     axis2: int = ...) -> HostPtrArray: ...
        def trace(self, offset: int = ..., axis1: int = ..., axis2: int = ..., *args: Any,
                  **kwargs: Any) -> _Reduced: ...
        def compress(self, condition: Any, axis: int | None = ..., *args: Any,
                     **kwargs: Any) -> HostPtrArray: ...
        def conj(self) -> HostPtrArray: ...
        def conjugate(self) -> HostPtrArray: ...
        @property
        def real(self) -> HostPtrArray: ...
        @property
        def imag(self) -> HostPtrArray: ...
        @property
        def itemsize(self) -> int: ...
        @property
        def strides(self) -> tuple[int, ...]: ...
    # END GENERATED

    # -- coherence hooks ---------------------------------------------------------
    def _host(self) -> np.ndarray:
        """The numpy view for a host read (acquires first if a device is newer).

        Internal: the view must not outlive the operation (it is not an escape)."""
        s = self._s
        if s.host_stale:
            _, lo, hi = self._bytes()  # (the span, cached: no pass over the view's strides)
            s.sync_range_for_host_read(lo, hi)
        return self._a

    def _writing(self, whole: bool = False) -> HostWrite:
        """A host write transaction: ``with x._writing() as a: a[...] = v``.

        ``whole``: the write overwrites every element of ``x`` with a value
        evaluated beforehand, so stale device data under ``x`` need not be
        acquired (only honoured when ``x`` is contiguous: a broadcast or strided
        view leaves gaps).  A write that raises
        leaves the newest data where it was (see :meth:`Storage.host_write`)."""
        return _write_view(self._s, self._a, whole)

    def _covers_storage(self) -> bool:
        return self._a.nbytes == self._s.nbytes

    # -- attributes ----------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """Array dimensions.

        Examples
        --------
        >>> import hostarray as ha
        >>> ha.zeros((2, 3)).shape
        (2, 3)
        """
        return self._a.shape

    @property
    def dtype(self) -> np.dtype:
        """Data type of the elements.

        Examples
        --------
        >>> import hostarray as ha
        >>> ha.asarray([1.0, 2.0]).dtype
        dtype('float64')
        """
        return self._a.dtype

    @property
    def ndim(self) -> int:
        """Number of dimensions.

        Examples
        --------
        >>> import hostarray as ha
        >>> ha.zeros((2, 3)).ndim
        2
        """
        return self._a.ndim

    @property
    def size(self) -> int:
        """Number of elements.

        Examples
        --------
        >>> import hostarray as ha
        >>> ha.zeros((2, 3)).size
        6
        """
        return self._a.size

    @property
    def nbytes(self) -> int:
        """Bytes of the elements (not counting the storage's padding).

        Examples
        --------
        >>> import hostarray as ha
        >>> ha.zeros(3, dtype=ha.float32).nbytes
        12
        """
        return self._a.nbytes

    @property
    def device(self) -> Device:
        """The device the array is attached to (``Device('cpu')`` for the host).

        Examples
        --------
        >>> import hostarray as ha
        >>> ha.zeros(3).device
        Device('cpu')
        """
        return self._device

    @property
    def T(self) -> HostPtrArray:
        """Transpose of a two-dimensional array (a view).

        Examples
        --------
        >>> import hostarray as ha
        >>> ha.zeros((2, 3)).T.shape
        (3, 2)
        """
        if self._a.ndim != 2:
            raise ValueError("x.T requires a 2-D array; use x.mT or ha.permute_dims for others")
        return _view(self, self._a.T)

    @property
    def mT(self) -> HostPtrArray:
        """Transpose of the last two axes (a view).

        Examples
        --------
        >>> import hostarray as ha
        >>> ha.zeros((4, 2, 3)).mT.shape
        (4, 3, 2)
        """
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

    # -- numpy's view, bytes and DLPack export --------------------------------------------------
    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """numpy's view of the data (an escape: see the coherence model), or a copy.

        The host data as numpy, per NumPy 2's ``copy`` rules: without a copy the returned
        view is an escape (it may be kept and written), so handing it out waits for
        in-flight launches and acquires first."""
        if dtype is not None and np.dtype(dtype) != self._a.dtype:
            if copy is False:
                raise ValueError(f"converting {self._a.dtype} to {np.dtype(dtype)} needs a "
                                 f"copy; pass copy=None or copy=True")
            return self._host().astype(dtype)
        if copy:
            return self._host().copy()
        return host_view(self)

    def __bytes__(self) -> bytes:
        """The elements' bytes in C order, as ``bytes(a)`` of a numpy array gives them
        (``x.tobytes()``; a read: acquires what a kernel wrote).  Without this, Python
        would build ``bytes(x)`` from the elements one by one (a HostPtrArray has no
        buffer protocol: see docs/interop.md)."""
        return self._host().tobytes()

    def __dlpack__(self, /, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """Export as a DLPack capsule (host memory, acquired first; see ``ha.from_dlpack``).

        Without ``copy=True`` the consumer shares the memory and may write it: the
        array counts as escaped while the consumer holds it.

        Parameters
        ----------
        stream : None
            Must be ``None``: the data is in host memory, there is no stream to order on.
        max_version : tuple of int, optional
            The newest DLPack version ``(major, minor)`` the consumer reads; ``None``:
            the legacy capsule.
        dl_device : tuple of int, optional
            Where the consumer wants the data: only ``(1, 0)`` (``kDLCPU``) or ``None``.
        copy : bool, optional
            ``True``: export a copy; ``False`` or ``None``: share this array's memory (a
            read-only array exports read-only).

        Returns
        -------
        PyCapsule
            The DLPack capsule over host memory.

        Raises
        ------
        BufferError
            ``stream`` is not ``None``, or ``dl_device`` is not the host ``(1, 0)``.

        Examples
        --------
        >>> import numpy as np, hostarray as ha
        >>> x = ha.asarray([1.0, 2.0])
        >>> np.from_dlpack(x).tolist()
        [1.0, 2.0]
        """
        if stream is not None:
            raise BufferError("hostarray arrays live in host memory: DLPack stream must be None")
        if dl_device is not None and tuple(dl_device) != (KDL_CPU, 0):
            raise BufferError(f"hostarray exports host memory only (dl_device=({KDL_CPU}, 0)), "
                              f"not {tuple(dl_device)}")
        if copy:
            src: np.ndarray = self._host()
        else:
            src = host_view(self)
            if not self._a.flags.writeable:
                src.flags.writeable = False
        return src.__dlpack__(max_version=max_version, copy=copy)

    def __dlpack_device__(self, /) -> tuple[int, int]:
        """``(1, 0)``: DLPack's ``kDLCPU``; the data is always in host memory."""
        return (KDL_CPU, 0)

    # -- array API: namespace and conversions to Python scalars ------------------------------
    def __array_namespace__(self, /, *, api_version: str | None = None) -> ModuleType:
        """The ``hostarray`` module: this array's array API namespace.

        Parameters
        ----------
        api_version : str, optional
            The array API version the caller wants (``"2025.12"``, or an earlier one
            hostarray implements); ``None``: the newest.

        Returns
        -------
        module
            The ``hostarray`` module.

        Raises
        ------
        ValueError
            ``api_version`` is a version hostarray does not implement.

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

    # -- Python conveniences, formatting, pickling --------------------------------------------
    def __len__(self) -> int:
        """``len(x)``: the first dimension; a 0-d array has none (``TypeError``, as numpy)."""
        if self._a.ndim == 0:
            raise TypeError("len() of a 0-d array")
        return self._a.shape[0]

    def __iter__(self) -> Iterator[Any]:
        """``iter(x)``: for a 1-D array, 0-d arrays on ``x``'s device that don't share its
        memory (as ``x[i]``; array-api-strict, CuPy and PyTorch yield 0-d arrays too, numpy
        yields scalars); views along axis 0 otherwise."""
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        if self._a.ndim == 1:
            # one snapshot, acquired once: later kernel writes don't race the loop, and the
            # elements are copies (an accumulator, a swap or a shuffle leaves x alone)
            snapshot = self._host().copy()
            dev = self._device
            return (wrap(snapshot[i, ...].copy(), dev) for i in range(snapshot.shape[0]))
        return (_view(self, self._host()[i]) for i in range(self._a.shape[0]))

    def __contains__(self, value: Any) -> bool:
        """``value in x``: whether any element equals ``value`` (numpy's rule)."""
        v = value._host() if isinstance(value, HostPtrArray) else value
        return bool((self._host() == v).any())

    def __format__(self, format_spec: str) -> str:
        """``format(x, spec)``: a 0-d array formats like its element; an empty spec gives
        ``str``."""
        if not format_spec:
            return str(self)
        if self._a.ndim == 0:
            return format(self._host().item(), format_spec)
        raise TypeError(f"unsupported format string {format_spec!r} for a {self._a.ndim}-d "
                        f"HostPtrArray; format its elements, e.g. with x.tolist()")

    def __reduce__(self) -> tuple[Any, ...]:
        return reduce(self)

    def __reduce_ex__(self, protocol: SupportsIndex, /) -> tuple[Any, ...]:
        return reduce(self, int(protocol))

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
        s = self._s
        if s.host_stale:
            a = self._a
            try:  # only the element's bytes (its 0-d view)
                element = a[_item_key(a, args)]
            except (IndexError, TypeError, ValueError):
                element = a  # numpy raises its own error below
            s.sync_for_host_read(element)
        return self._a.item(*args)

    # -- indexing, and the host write of x[key] = value ---------------------------------------
    def __getitem__(self, key: Any, /) -> HostPtrArray:
        """``x[key]``, as numpy indexes: a basic key (integers, slices, ``...``,
        ``None``) gives a view of the same memory and reads nothing; an integer per axis
        gives a 0-d copy of that element (only its bytes acquired); an advanced key
        (integer or boolean arrays) gives a copy, acquiring the bytes it reads.

        Parameters
        ----------
        key : int, slice, ellipsis, None, HostPtrArray, array_like or tuple of them
            The index, as numpy takes it (numpy integers and 0-d integer arrays are
            integers).

        Returns
        -------
        HostPtrArray
            The view or copy, on this array's device.

        Raises
        ------
        IndexError
            An index out of bounds, or more indices than dimensions.

        Examples
        --------
        >>> import hostarray as ha
        >>> x = ha.asarray([[1, 2, 3], [4, 5, 6]])
        >>> x[1, 1:].tolist(), x[0, 2].tolist()
        ([5, 6], 3)
        """
        t = type(key)
        basic = t in _BASIC or (t is tuple and all(type(k) in _BASIC for k in key))
        if not basic:
            # numpy integers and 0-d integer arrays are integer indices: basic indexing
            key = _int_key(key)
            t = type(key)
            basic = t in _BASIC or (t is tuple and all(type(k) in _BASIC for k in key))
        if basic:
            # basic indexing: a view, which reads nothing (no acquire)
            r = self._a[key]
            if type(r) is not np.ndarray:
                # an integer for every axis: numpy answers with a scalar, a copy, and so
                # does hostarray (a 0-d array over memory of its own: ``acc = x[0];
                # acc += x[1]`` and ``x[0], x[1] = x[1], x[0]`` must leave x alone).
                # Only the element's bytes are acquired.
                return self._element(key if t is tuple else (key,))
            return _new(r, self._s, self._device)
        key = _numpy_key(key)
        cover = _advanced_cover(self._a, key) if self._s.host_stale else None
        if cover is not None:  # only the bytes around the elements read (one run)
            self._s.sync_for_host_read(cover)
            r = self._a[key]
        else:
            r = self._host()[key]
        if isinstance(r, np.ndarray) and r.base is not None and np.may_share_memory(r, self._a):
            return _view(self, r)
        return wrap(np.asarray(r), self._device)

    def _element(self, key: tuple[Any, ...]) -> HostPtrArray:
        """A 0-d copy of the element ``self._a[key]`` (``key``: an integer per axis) on
        this array's device; acquires that element's bytes only."""
        s = self._s
        element = self._a[(*key, ...)]  # the element's 0-d view
        with s.lock:  # (no launch may write the element between the acquire and the copy)
            if s.host_stale:
                s.sync_for_host_read(element)
            copy = element.copy()
        return wrap(copy, self._device)

    def __setitem__(self, key: Any, value: Any, /) -> None:
        """``x[key] = value``: the key's conversions run once and refusals come first; where
        a device holds newer bytes of ``x`` or ``value``, the computing half's
        ``_write_on_device`` may write it there (a basic key: only the written bytes change
        state); else the host writes it, in one transaction.

        Parameters
        ----------
        key : int, slice, ellipsis, None, HostPtrArray, array_like or tuple of them
            The elements to write, as numpy indexes.
        value : HostPtrArray, array_like or Python scalar
            What to write, broadcast to the elements' shape and cast to ``x``'s type.

        Raises
        ------
        ValueError
            ``x`` is read-only (a broadcast or diagonal view, read-only memory), or
            ``value`` does not broadcast to the elements' shape.
        IndexError
            An index out of bounds.

        Examples
        --------
        >>> import hostarray as ha
        >>> x = ha.zeros(4)
        >>> x[1:3] = 7.0
        >>> x.tolist()
        [0.0, 7.0, 7.0, 0.0]
        """
        if not self._a.flags.writeable:  # refused before the coherence state is touched
            raise ValueError("this array is read-only (a broadcast or diagonal view, or read-only "
                             "memory: np.frombuffer on bytes, a read-only numpy array); write "
                             "to a copy, ha.asarray(x, copy=True)")
        if type(key) is not int:
            # numpy integers and 0-d integer arrays are integer indices: a basic key, whose
            # write touches (and acquires) only its element; the key's own callbacks run
            # now, once (numpy would run them inside the write, and at each use)
            key = _int_key(key)
        key = _numpy_key(key)
        if type(value) is HostPtrArray and value._s is self._s and _is_view(
                _basic_target(self._a, key), value._a):
            # x[k] = x[k], as `x[k] += 1` ends (after its in-place add): the bytes hold the
            # value already, and numpy copies nothing either; nothing to refuse or record
            return
        if self._s.coh is not None and self._s.coh.raw_blocks:
            # an open cl_buffer block may write these bytes: refused before the value is
            # read (which may acquire) or anything else happens
            written = _basic_target(self._a, key)
            self._s.refuse_host_write(self._a if written is None else written)
        if type(value) is str or type(value) is bytes:
            # text numpy parses, converted now as numpy would: one that does not parse is
            # refused before anything is read or written
            value = np.asarray(value, dtype=self._a.dtype)[()]
        if (self._s.host_stale or (type(value) is HostPtrArray and value._s.host_stale)) \
                and self._device.framework == "opencl":
            # a device holds newer data: a basic index may be written there, with no acquire
            if self._write_on_device(key, value):
                return
        if not (type(value) in _EVALUATED or isinstance(value, _VALUES)):
            # arrays in a list are read, and objects numpy converts by calling back into
            # Python are converted, here, before this storage's lock is taken: a callback
            # reading another array would take its lock out of the global order (a
            # deadlock with a launch using both)
            value = _host_values(value)
        # the acquire of the written bytes is skipped only when the value can neither fail
        # to convert half-way (an object array, a list, text numpy parses element by
        # element) nor read this array late
        whole = (type(value) in _EVALUATED
                 or (isinstance(value, _VALUES) and not value.dtype.hasobject
                     and value.dtype.kind not in "SU"))
        # both storages' locks in the one global order when the value is an array: its
        # read may acquire (another thread writing it from this array must not deadlock)
        a, s = self._a, self._s
        # the bytes written, for the coherence record: not needed (and not built, as every
        # write would pay for it) while only the host holds the data.  That flag is read
        # without the lock, so the fallback must be right whatever happens before the
        # write starts: all of x, acquired first where stale (never skipped).
        target = None if s.host_exclusive else _basic_target(a, key)
        if target is None and not s.host_exclusive:
            # advanced indexing: the bytes around the elements written, not all written
            target = _advanced_cover(a, key)
            whole = False
        if target is None:  # other advanced keys or host-only data: all of x, not all written
            whole, target = False, a
        with locked((s, value._s)) if isinstance(value, HostPtrArray) else s.lock:
            v = value._host() if isinstance(value, HostPtrArray) else value
            with _write_view(s, target, whole):
                a[key] = v  # numpy's own semantics of the key (not target[...] = v)

    # -- printing ---------------------------------------------------------------------
    def __repr__(self) -> str:
        body = np.array2string(self._host(), separator=", ", prefix="HostPtrArray(")
        extra = "" if self._device.framework == "host" else f", device={str(self._device)!r}"
        return f"HostPtrArray({body}, dtype={self.dtype.name}{extra})"

    def __str__(self) -> str:
        return str(self._host())


# -- construction helpers used across the package ------------------------------------------

_alloc = object.__new__  # (HostPtrArray.__init__ refuses direct construction)


def _new(a: np.ndarray, s: Storage, device: Device) -> HostPtrArray:
    """The one constructor: a HostPtrArray of the elements ``a`` over the storage ``s``
    (``a`` a numpy view of its memory), attached to ``device``."""
    obj = _alloc(HostPtrArray)
    obj._a = a
    obj._s = s
    obj._device = device
    obj._span = None
    return obj


def _view(x: HostPtrArray, a: np.ndarray, device: Device | None = None) -> HostPtrArray:
    """A view of ``x``'s storage (same coherence state).

    ``a`` must be a numpy array over that storage's memory: anything else (a numpy
    scalar, a copy) would give an array whose byte span lies outside the storage, read
    and written by the device path as if it were there (garbage, heap corruption)."""
    if type(a) is not np.ndarray:
        raise TypeError(f"hostarray: internal error: a view of {type(a).__name__} (not an "
                        f"ndarray over the array's memory); please report it")
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
            s.sync_for_host_read(v)
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
# index parts numpy takes as integers (np.int64(3), a 0-d integer array): basic indexing
# with them gives the same views as with ints (``x[np.argmax(a)]`` is a view too)
_INTEGER_KEYS = frozenset([np.dtype(c).type for c in "bBhHiIlLqQ"] + [HostPtrArray])


def _int_key(key: Any) -> Any:
    """``key`` with numpy integer scalars, 0-d integer arrays (HostPtrArrays and numpy's)
    and other objects with ``__index__`` made ints, slices of such objects made slices of
    ints, and other objects with ``__array__`` made numpy arrays, as numpy takes them: their
    callbacks run here, once, before anything is acquired or written (they might use the
    array itself)."""
    def one(k: Any) -> Any:
        t = type(k)
        if t in _BASIC:
            if t is slice and not all(type(p) is int or p is None
                                      for p in (k.start, k.stop, k.step)):
                # numpy would call each part's __index__ at every use of the key
                return slice(*(None if p is None else operator.index(p)
                               for p in (k.start, k.stop, k.step)))
            return k
        if t is HostPtrArray:
            return operator.index(k) if k._a.ndim == 0 and k._a.dtype.kind in "iu" else k
        if t is np.ndarray:
            return int(k) if k.ndim == 0 and k.dtype.kind in "iu" else k
        if t in _INTEGER_KEYS:
            return int(k)
        if t is bool or t is np.bool_ or t is list or t is str:
            return k  # (a bool is a mask to numpy, not an integer)
        if hasattr(t, "__index__"):
            try:
                return operator.index(k)
            except (TypeError, ValueError):  # another library's array of several elements
                pass
        if hasattr(t, "__array__"):
            return one(np.asarray(k))  # converted once, here, as numpy would convert it
        return k
    return tuple(one(k) for k in key) if type(key) is tuple else one(key)


def _advanced_cover(a: np.ndarray, key: Any) -> np.ndarray | None:
    """A view of ``a`` whose bytes cover every element ``a[key]`` reads or writes, for
    the advanced keys whose cover is cheap to find: integer indices along the first axis
    (a list of ints, an integer array) and a boolean mask of the first axis or of all of
    ``a`` (C-contiguous); ``None`` for any other key (then all of ``a``).  The cover runs
    from the first element touched to the last: the bytes between are acquired too."""
    if a.ndim == 0:
        return None
    if type(key) is list:
        if not key or not all(type(k) is int for k in key):
            return None
        try:
            key = np.asarray(key, dtype=np.intp)
        except OverflowError:
            return None  # numpy raises its IndexError on the whole-array path
    elif type(key) is not np.ndarray:
        return None
    n = a.shape[0]
    kind = key.dtype.kind
    if kind == "b":
        if key.ndim == 1 and key.shape[0] == n:
            rows = np.flatnonzero(key)
            return a[rows[0]:rows[-1] + 1] if rows.size else a[0:0]
        if key.shape == a.shape:
            if a.flags.c_contiguous:
                flat = np.flatnonzero(key)
                return a.reshape(-1)[flat[0]:flat[-1] + 1] if flat.size else a[0:0]
            # another view: the rows (first axis) from the first touched to the last
            rows = np.flatnonzero(key.any(axis=tuple(range(1, key.ndim))))
            return a[rows[0]:rows[-1] + 1] if rows.size else a[0:0]
        return None
    if kind not in "iu":
        return None
    if key.size == 0:
        return a[0:0]
    lo, hi = int(key.min()), int(key.max())
    if lo < -n or hi >= n:
        return None  # out of bounds: numpy raises, on the whole-array path
    if lo < 0:  # negative indices count from the end (in int64: int8 can't hold n)
        k64 = key.astype(np.int64)
        wrapped = np.where(k64 < 0, k64 + n, k64)
        lo, hi = int(wrapped.min()), int(wrapped.max())
    return a[lo:hi + 1]


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


def _item_key(a: np.ndarray, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The basic index of the element ``a.item(*args)`` reads, ending in ``...`` (so that
    ``a[key]`` is its 0-d view): one flat index, or one index per axis."""
    if len(args) == 1 and type(args[0]) is tuple:
        args = args[0]
    if len(args) == 1 and a.ndim != 1:
        i = operator.index(args[0])
        args = tuple(np.unravel_index(i + a.size if i < 0 else i, a.shape))
    return (*(operator.index(i) for i in args), ...)


def _numpy_key(key: Any) -> Any:
    """Index key with HostPtrArrays replaced by their host numpy arrays."""
    if isinstance(key, HostPtrArray):
        return key._host()
    if isinstance(key, tuple):
        return tuple(k._host() if isinstance(k, HostPtrArray) else k for k in key)
    return key


def basic_key(key: Any) -> bool:
    """Whether ``key`` is a basic index (integers, slices, ``...``, ``None``): it gives a
    view."""
    return type(key) in _BASIC or (type(key) is tuple and all(type(k) in _BASIC for k in key))


def _basic_target(a: np.ndarray, key: Any) -> np.ndarray | None:
    """The view of ``a`` that ``a[key] = v`` writes, for a basic index (integers,
    slices, ``...``, ``None``); ``None`` for an advanced one (arrays, masks)."""
    parts = key if type(key) is tuple else (key,)
    if not all(type(k) in _BASIC for k in parts):
        return None
    if not any(k is Ellipsis for k in parts):
        parts = (*parts, ...)  # a view even when every axis gets an integer
    return a[parts]


def _write_view(s: Storage, a: np.ndarray, whole: bool) -> HostWrite:
    """The host write transaction of the bytes view ``a`` covers; ``whole`` (the value
    evaluated beforehand) is kept only for a contiguous view, which has no gaps."""
    return s.host_write(whole and (a.flags.c_contiguous or a.flags.f_contiguous), a)



# -- pickling --------------------------------------------------------------------------------

def _rebuild(a: np.ndarray, device_key: str) -> HostPtrArray:
    """Unpickle: the data on the device of that name if this process has it, else the host."""
    dev = HOST
    if device_key != "cpu":
        try:
            dev = _parse_device(device_key)
        except HostPtrError as e:
            warnings.warn(f"the pickled array was on {device_key}, which this process does not "
                          f"have ({e}); it is on the host now", RuntimeWarning, stacklevel=2)
    if not a.flags.writeable:  # e.g. unpickled from a read-only buffer: kernels may write it
        return wrap(aligned_copy(a), dev)
    # an out-of-band buffer may still be held by whoever unpickles: adopted, the array is
    # escaped while they hold it
    return adopt(a, dev, None)


def reduce(x: HostPtrArray, protocol: int = 2) -> tuple[Any, ...]:
    """``x.__reduce_ex__``: the host data (acquired first) and the device recorded by name.

    From protocol 5 numpy gives the pickler a ``PickleBuffer`` over the data, which a
    ``buffer_callback`` may keep (out of band): over ``x``'s memory that would be a raw
    view no escape records (stale bytes on a copied link, writes hostarray never sees),
    so the data is a copy then, as in band it is anyway."""
    a = x._host()
    return (_rebuild, (a.copy() if protocol >= 5 else a, str(x._device)))
