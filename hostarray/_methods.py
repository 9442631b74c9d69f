"""The array's computing methods: operators, numpy's protocols, ndarray-style methods,
the device write of ``x[key] = value``, copies.

:class:`ArrayMethods` is the half of :class:`~hostarray.HostPtrArray` that computes, a
layer above the namespace (the array's own module, :mod:`hostarray._array`, holds the
half that moves and reads data and imports nothing above it).  Its class body
declares every method, as numpy's ``lib/mixins.py`` declares the operators; they are
attached to ``HostPtrArray`` once, when this module is imported (``import hostarray``
imports it), and a type checker reads them from the declarations in the array's class
body, which ``scripts/gen_stubs.py`` writes from this class.

* the operators are the namespace's element-wise functions'
  (:func:`hostarray._api.elementwise.operators`): they compute where the newest data
  is (:mod:`hostarray._placement`);
* ``__array_ufunc__`` and ``__array_function__`` (:mod:`hostarray._interop`): numpy's
  spellings of the namespace's functions are its calls (on the device where the newest
  data is), everything else numpy on the host data;
* the device write of ``x[key] = value`` (the array's ``__setitem__`` asks it where a
  device holds newer bytes) and copies ask :func:`~hostarray._placement.try_device`;
* the ndarray-style methods and attributes (``x.reshape``, ``x.sum``, ``x.real`` ...) are
  numpy's functions (``x.sum(axis=0)`` is ``np.sum(x, axis=0)``, so it follows that
  function: on the device for device-newest data), array results ``HostPtrArray``
  objects on ``x``'s device.  They are real class attributes, not ``__getattr__``: numpy
  probes arrays for missing attributes (``__array_interface__`` ...) on every
  conversion, and a Python ``__getattr__`` would slow each probe down.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _interop
from ._api import elementwise as _ew
from ._api.creation import asarray
from ._api.manipulation import permute_dims, reshape
from ._array import HostPtrArray, _view, aligned_copy, wrap
from ._placement import device_newest, try_device

__all__ = ["ArrayMethods", "METHODS", "ATTRIBUTES", "EXAMPLES"]

if TYPE_CHECKING:  # a type checker reads the methods against the array's declarations
    from ._array import _Operand

    _Base = HostPtrArray
else:
    _Base = object

#: the ndarray-style methods and attributes, by name (the docs' reference and
#: ``scripts/gen_stubs.py`` read them)
METHODS: dict[str, Callable[..., Any]] = {}
ATTRIBUTES: dict[str, Callable[[HostPtrArray], Any]] = {}

# a runnable example per method and attribute (docstrings; tests/tooling/test_docs.py runs them)
EXAMPLES: dict[str, list[tuple[str, str]]] = {
    'reshape': [('ha.arange(6).reshape(2, 3).shape', '(2, 3)')],
    'transpose': [('ha.zeros((2, 3)).transpose().shape', '(3, 2)')],
    'swapaxes': [('ha.zeros((1, 2, 3)).swapaxes(0, 2).shape', '(3, 2, 1)')],
    'squeeze': [('ha.zeros((1, 3, 1)).squeeze().shape', '(3,)')],
    'ravel': [('ha.asarray([[1, 2], [3, 4]]).ravel().tolist()', '[1, 2, 3, 4]')],
    'flatten': [('ha.asarray([[1, 2], [3, 4]]).flatten().tolist()', '[1, 2, 3, 4]')],
    'astype': [('ha.asarray([1.5, 2.5]).astype(ha.int32).tolist()', '[1, 2]')],
    'copy': [('ha.asarray([1, 2]).copy().tolist()', '[1, 2]')],
    'view': [('ha.asarray([1, 2], dtype=ha.int32).view(ha.uint32).dtype', "dtype('uint32')")],
    'sort': [('x = ha.asarray([3, 1, 2]); x.sort(); x.tolist()', '[1, 2, 3]')],
    'fill': [('x = ha.zeros(3); x.fill(7.0); x.tolist()', '[7.0, 7.0, 7.0]')],
    'sum': [('int(ha.asarray([[1, 2], [3, 4]]).sum())', '10'),
            ('ha.asarray([[1, 2], [3, 4]]).sum(axis=0).tolist()', '[4, 6]')],
    'prod': [('int(ha.asarray([1, 2, 3, 4]).prod())', '24')],
    'mean': [('float(ha.asarray([1.0, 2.0, 3.0]).mean())', '2.0')],
    'std': [('float(ha.asarray([1.0, 3.0]).std())', '1.0')],
    'var': [('float(ha.asarray([1.0, 3.0]).var())', '1.0')],
    'min': [('int(ha.asarray([3, 1, 2]).min())', '1')],
    'max': [('int(ha.asarray([3, 1, 2]).max())', '3')],
    'argmin': [('int(ha.asarray([3, 1, 2]).argmin())', '1')],
    'argmax': [('int(ha.asarray([3, 1, 2]).argmax())', '0')],
    'any': [('bool(ha.asarray([0, 1, 0]).any())', 'True')],
    'all': [('bool(ha.asarray([0, 1, 0]).all())', 'False')],
    'cumsum': [('ha.asarray([1, 2, 3]).cumsum().tolist()', '[1, 3, 6]')],
    'cumprod': [('ha.asarray([1, 2, 3]).cumprod().tolist()', '[1, 2, 6]')],
    'clip': [('ha.asarray([-1, 0, 5]).clip(0, 3).tolist()', '[0, 0, 3]')],
    'round': [('ha.asarray([1.26, 2.5]).round(1).tolist()', '[1.3, 2.5]')],
    'dot': [('float(ha.asarray([1.0, 2.0]).dot(ha.asarray([3.0, 4.0])))', '11.0')],
    'nonzero': [('[i.tolist() for i in ha.asarray([0, 2, 0, 3]).nonzero()]', '[[1, 3]]')],
    'argsort': [('ha.asarray([3, 1, 2]).argsort().tolist()', '[1, 2, 0]')],
    'searchsorted': [('int(ha.asarray([1, 2, 4]).searchsorted(3))', '2')],
    'take': [('ha.asarray([10, 20, 30]).take([2, 0]).tolist()', '[30, 10]')],
    'repeat': [('ha.asarray([1, 2]).repeat(2).tolist()', '[1, 1, 2, 2]')],
    'diagonal': [('ha.asarray([[1, 2], [3, 4]]).diagonal().tolist()', '[1, 4]')],
    'trace': [('int(ha.asarray([[1, 2], [3, 4]]).trace())', '5')],
    'compress': [('ha.asarray([1, 2, 3]).compress([True, False, True]).tolist()', '[1, 3]')],
    'conj': [('ha.asarray([1 + 2j]).conj().tolist()', '[(1-2j)]')],
    'conjugate': [('ha.asarray([1 + 2j]).conjugate().tolist()', '[(1-2j)]')],
    'real': [('ha.asarray([1 + 2j]).real.tolist()', '[1.0]')],
    'imag': [('ha.asarray([1 + 2j]).imag.tolist()', '[2.0]')],
    'itemsize': [('ha.zeros(3, dtype=ha.float32).itemsize', '4')],
    'strides': [('ha.zeros((2, 3), dtype=ha.float64).strides', '(24, 8)')],
}


def _examples(name: str) -> str:
    """The numpydoc Examples section of method or attribute ``name``."""
    body = "".join(f"    >>> {src}\n    {out}\n" for src, out in EXAMPLES[name])
    return f"\n\n    Examples\n    --------\n    >>> import hostarray as ha\n{body}"


def _ndarray(name: str, f: Callable[..., Any]) -> Callable[..., Any]:
    """numpy's ``ndarray.<name>`` as a method: ``f(x, *args, **kwargs)``."""
    def method(self: HostPtrArray, *args: Any, **kwargs: Any) -> Any:
        return f(self, *args, **kwargs)

    METHODS[name] = f
    method.__name__ = name
    method.__qualname__ = f"HostPtrArray.{name}"
    method.__doc__ = (f"numpy's ``ndarray.{name}``; array results are HostPtrArrays on the "
                      f"same device.{_examples(name)}")
    method.__module__ = HostPtrArray.__module__  # its doctest runs with the class's
    method._ndarray_method = True  # type: ignore[attr-defined]  # (docs/_ext: its entry)
    return method


def _attribute(name: str, g: Callable[[HostPtrArray], Any]) -> property:
    """numpy's ``ndarray.<name>`` attribute as a property: ``g(x)``."""
    ATTRIBUTES[name] = g
    return property(g, doc=f"numpy's ``ndarray.{name}``.{_examples(name)}")


def _shape_args(args: tuple[Any, ...]) -> Any:
    """``x.reshape(2, 3)`` and ``x.reshape((2, 3))`` mean the same (as in numpy)."""
    return args[0] if len(args) == 1 else args


def _reshape(x: HostPtrArray, *shape: Any, **kw: Any) -> Any:
    # a view reads nothing: through the namespace, which makes it without an acquire
    return np.reshape(x, _shape_args(shape), **kw) if kw else reshape(x, _shape_args(shape))


def _transpose(x: HostPtrArray, *axes: Any) -> HostPtrArray:
    order = tuple(_shape_args(axes)) if axes and axes != (None,) else \
        tuple(range(x._a.ndim))[::-1]
    return permute_dims(x, order)


def _astype(x: HostPtrArray, dtype: Any, *args: Any, **kwargs: Any) -> HostPtrArray:
    """``x.astype(dtype)``: converted by the device holding the newest data where it can
    (as ``ha.astype``), else numpy's ``astype`` on the host data."""
    dt = np.dtype(dtype)
    if dt == x._a.dtype and not kwargs.get("copy", True):
        return x
    if device_newest(x) and not args and set(kwargs) <= {"copy"}:
        r = try_device("astype", (x,), dtype=dt)
        if r is not None:
            return r
    numpy_astype: Any = np.astype  # numpy's overloads don't know HostPtrArray
    return numpy_astype(x, dtype, *args, **kwargs)


def _view_as(x: HostPtrArray, dtype: Any = None) -> HostPtrArray:
    a = x._host()
    return _view(x, a.view() if dtype is None else a.view(dtype))


class ArrayMethods(_Base):
    """The computing half of :class:`~hostarray.HostPtrArray`, attached to it once."""

    __slots__ = ()

    # -- the standard's operators: the element-wise functions' ------------------------------
    __abs__ = _ew.operators("abs")
    __neg__ = _ew.operators("negative")
    __pos__ = _ew.operators("positive")
    __invert__ = _ew.operators("bitwise_invert")
    __add__, __radd__, __iadd__ = _ew.operators("add")
    __sub__, __rsub__, __isub__ = _ew.operators("subtract")
    __mul__, __rmul__, __imul__ = _ew.operators("multiply")
    __truediv__, __rtruediv__, __itruediv__ = _ew.operators("divide")
    __floordiv__, __rfloordiv__, __ifloordiv__ = _ew.operators("floor_divide")
    __mod__, __rmod__, __imod__ = _ew.operators("remainder")
    __pow__, __rpow__, __ipow__ = _ew.operators("pow")
    __matmul__, __rmatmul__, __imatmul__ = _ew.operators("matmul")
    __and__, __rand__, __iand__ = _ew.operators("bitwise_and")
    __or__, __ror__, __ior__ = _ew.operators("bitwise_or")
    __xor__, __rxor__, __ixor__ = _ew.operators("bitwise_xor")
    __lshift__, __rlshift__, __ilshift__ = _ew.operators("bitwise_left_shift")
    __rshift__, __rrshift__, __irshift__ = _ew.operators("bitwise_right_shift")
    __eq__ = _ew.operators("equal")
    __ne__ = _ew.operators("not_equal")
    __lt__ = _ew.operators("less")
    __le__ = _ew.operators("less_equal")
    __gt__ = _ew.operators("greater")
    __ge__ = _ew.operators("greater_equal")
    __hash__ = None  # mutable, like ndarray

    def __divmod__(self, other: _Operand, /) -> tuple[HostPtrArray, HostPtrArray]:
        """``divmod(x, y)``: ``(x // y, x % y)``, as for numpy arrays.

        Examples
        --------
        >>> import hostarray as ha
        >>> q, r = divmod(ha.asarray([7, -7]), 4)
        >>> q.tolist(), r.tolist()
        ([1, -2], [3, 1])
        """
        return self // other, self % other

    def __rdivmod__(self, other: _Operand, /) -> tuple[HostPtrArray, HostPtrArray]:
        """``divmod(y, x)`` with ``x`` the array: ``(y // x, y % x)``.

        Examples
        --------
        >>> import hostarray as ha
        >>> q, r = divmod(7, ha.asarray([2, 3]))
        >>> q.tolist(), r.tolist()
        ([3, 2], [1, 1])
        """
        return other // self, other % self  # type: ignore[return-value]

    def __round__(self, ndigits: int | None = None) -> Any:
        """``round(x)`` and ``round(x, ndigits)`` of a 0-d array, as of numpy's scalar (an
        element ``x[i]`` is a 0-d array here where numpy gives a scalar): without
        ``ndigits`` a Python ``int`` (``OverflowError`` for an infinity, ``ValueError``
        for NaN); with it, a 0-d array rounded half to even.  An array of more dimensions
        raises ``TypeError``, as numpy's arrays do: use ``ha.round(x)`` or
        ``np.round(x, decimals)``.

        Examples
        --------
        >>> import hostarray as ha
        >>> round(ha.asarray(2.567), 2).tolist()
        2.57
        >>> round(ha.asarray(2.5)), round(ha.asarray([1.5, 7.0])[1])
        (2, 7)
        """
        if self.ndim != 0:
            raise TypeError(f"round() of a {self.ndim}-d HostPtrArray: round() takes a 0-d "
                            f"array (as a numpy scalar); use ha.round(x) or "
                            f"np.round(x, decimals) for arrays")
        if ndigits is None:
            return round(self._host().item())
        return asarray(np.round(self._host(), operator.index(ndigits)), device=self._device)

    # -- numpy's protocols: numpy computes on the host data ------------------------------------
    __array_ufunc__ = _interop.array_ufunc
    __array_function__ = _interop.array_function

    # -- writes and copies ----------------------------------------------------------------------
    def _write_on_device(self, key: Any, value: Any) -> bool:
        """``x[key] = value`` on the device, where placement says so (``x.__setitem__``
        asks, where a device holds newer bytes of ``x`` or ``value``): whether it was."""
        return try_device("setitem", (self, value), key=key) is not None

    def __copy__(self) -> HostPtrArray:
        """``copy.copy(x)``: a new array with a copy of the data, on the same device (as
        numpy); copied by that device where it holds the newest data (nothing acquired)."""
        if device_newest(self):
            r = try_device("copy", (self,))
            if r is not None:
                return r
        return wrap(aligned_copy(self._host()), self._device)

    def __deepcopy__(self, memo: dict[int, Any]) -> HostPtrArray:
        """``copy.deepcopy(x)``: as :meth:`__copy__` (the elements are plain numbers)."""
        r = self.__copy__()
        memo[id(self)] = r
        return r

    # -- numpy's ndarray methods and attributes ---------------------------------------------------
    reshape = _ndarray("reshape", _reshape)
    transpose = _ndarray("transpose", _transpose)
    swapaxes = _ndarray("swapaxes", np.swapaxes)
    squeeze = _ndarray("squeeze", np.squeeze)
    ravel = _ndarray("ravel", np.ravel)
    flatten = _ndarray("flatten", lambda x, order="C": wrap(x._host().flatten(order), x._device))
    astype = _ndarray("astype", _astype)
    copy = _ndarray("copy", lambda x, order="C": x.__copy__())
    view = _ndarray("view", _view_as)
    sort = _ndarray("sort", _interop.sort)
    fill = _ndarray("fill", _interop.fill)
    sum = _ndarray("sum", np.sum)
    prod = _ndarray("prod", np.prod)
    mean = _ndarray("mean", np.mean)
    std = _ndarray("std", np.std)
    var = _ndarray("var", np.var)
    min = _ndarray("min", np.min)
    max = _ndarray("max", np.max)
    argmin = _ndarray("argmin", np.argmin)
    argmax = _ndarray("argmax", np.argmax)
    any = _ndarray("any", np.any)
    all = _ndarray("all", np.all)
    cumsum = _ndarray("cumsum", np.cumsum)
    cumprod = _ndarray("cumprod", np.cumprod)
    # ndarray.clip(min=None, max=None, out=None): one bound is enough (np.clip wants both)
    clip = _ndarray("clip", lambda x, min=None, max=None, out=None, **kw:
                    np.clip(x, min, max, out=out, **kw))
    round = _ndarray("round", np.round)
    dot = _ndarray("dot", np.dot)
    nonzero = _ndarray("nonzero", np.nonzero)
    argsort = _ndarray("argsort", np.argsort)
    searchsorted = _ndarray("searchsorted", np.searchsorted)
    take = _ndarray("take", np.take)
    repeat = _ndarray("repeat", np.repeat)
    diagonal = _ndarray("diagonal", np.diagonal)
    trace = _ndarray("trace", np.trace)
    # ndarray.compress(condition, ...) but np.compress(condition, a, ...)
    compress = _ndarray("compress", lambda x, condition, *a, **kw:
                        np.compress(condition, x, *a, **kw))
    conj = _ndarray("conj", np.conjugate)
    conjugate = _ndarray("conjugate", np.conjugate)
    real = _attribute("real", np.real)
    imag = _attribute("imag", np.imag)
    itemsize = _attribute("itemsize", lambda x: x._a.dtype.itemsize)
    strides = _attribute("strides", lambda x: x._a.strides)


# class bookkeeping, not methods
_NOT_ATTACHED = frozenset(("__module__", "__qualname__", "__doc__", "__slots__",
                           "__annotations__", "__firstlineno__", "__static_attributes__",
                           "__orig_bases__", "__parameters__"))


def _attach(cls: type) -> None:
    """Give ``cls`` every method of :class:`ArrayMethods` (once: none of them may be one
    that ``cls`` defines itself)."""
    for name, value in vars(ArrayMethods).items():
        if name in _NOT_ATTACHED:
            continue
        if name in vars(cls):
            raise RuntimeError(f"hostarray: internal error: {cls.__name__}.{name} is defined "
                               f"twice; please report it")
        setattr(cls, name, value)


_attach(HostPtrArray)
