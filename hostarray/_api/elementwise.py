"""Element-wise functions of the array API standard, and the array's operators.

All 67 functions and the operators of :class:`~hostarray.HostPtrArray` are
built from one table, :data:`TABLE`: each row names the function, its numpy
implementation, its parameters and the operators it backs.  The builders
below make real Python functions with the standard's exact signatures
(positional-only parameters), so ``inspect.signature`` needs no help, and
keep the hot path short: one type test and one flag test per operand (the
flag is :func:`hostarray._placement.device_newest`'s, written inline: where it
is set, :func:`~hostarray._placement.try_device` decides).  The array's
operators are :func:`operators`' methods, which :class:`hostarray._methods.ArrayMethods`
declares in its class body.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from .._array import HostPtrArray, _new, wrap
from .._devices import HOST
from .._placement import device_newest, join, try_device
from .._storage import Storage, aligned_empty, locked

HPA = HostPtrArray
ndarray = np.ndarray
_PY_SCALARS = (bool, int, float, complex)
_OTHER_OPERANDS = (np.ndarray, np.generic)

__all__: list[str] = []


# -- implementations where numpy differs from the standard ----------------------------------

def _floor_divide(a: Any, b: Any) -> Any:
    dt = np.result_type(a, b)
    if dt.kind != "f":
        return np.floor_divide(a, b)
    # numpy pairs // with % (Python's rule); the standard prefers floor(x1 / x2)
    # when an operand is infinite: inf // 2 is inf, 1 // -inf is -0.
    inf = _infinite(a, dt) | _infinite(b, dt)
    if not inf.any():
        return np.floor_divide(a, b)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(inf, np.floor(np.divide(a, b)), np.floor_divide(a, b))


def _infinite(v: Any, dt: np.dtype) -> Any:
    """Where ``v`` is infinite as the loop of type ``dt`` sees it: a Python scalar converted
    to ``dt`` first, as numpy converts it (``1e39`` is ``inf`` in float32; ``2**70`` is a
    float, not an object numpy's ``isinf`` refuses)."""
    if type(v) in _PY_SCALARS:
        with np.errstate(over="ignore"):  # numpy's own operation warns of the cast
            v = np.asarray(v, dtype=dt)
    return np.isinf(v)


def _expm1(x: np.ndarray) -> Any:
    if x.dtype.kind != "c":
        return np.expm1(x)
    # exp(a+bj) - 1 = expm1(a)cos(b) - 2 sin^2(b/2) + j exp(a)sin(b): accurate near 0;
    # exp(z) - 1 gives the standard's special cases where a or b is not finite.
    with np.errstate(invalid="ignore", over="ignore"):
        a, b = x.real, x.imag
        half = np.sin(b / 2)
        r = np.empty(x.shape, dtype=x.dtype)
        r.real = np.expm1(a) * np.cos(b) - 2 * half * half
        r.imag = np.exp(a) * np.sin(b)
        bad = ~np.isfinite(x)
        if bad.any():
            r[bad] = np.exp(x[bad]) - 1
        # the imaginary part of a real-axis argument stays an exact (signed) zero
        zero_b = (b == 0) & np.isfinite(a)
        if zero_b.any():
            r.imag[zero_b] = b[zero_b]
            # the standard: expm1(±0 + 0j) is +0 + 0j (and, by conjugation, ±0 - 0j gives
            # +0 - 0j); the formula above would give expm1(-0) = -0 for the real part
            r.real[zero_b & (a == 0)] = 0
    return r


def _sign(x: np.ndarray) -> Any:
    if x.dtype.kind != "c":
        return np.sign(x)
    # x / |x|, scaled first by the larger component so that subnormal and huge inputs
    # neither underflow nor overflow (numpy's own complex sign loses them)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        m = np.maximum(np.abs(x.real), np.abs(x.imag))
        finite = np.isfinite(m) & (m != 0)
        scale = np.where(finite, m, 1)
        u = np.empty_like(x)
        u.real = x.real / scale  # real divisions: complex division by a subnormal overflows
        u.imag = x.imag / scale
        n = np.abs(u)
        r = np.empty_like(x)
        r.real = u.real / n
        r.imag = u.imag / n
        r = np.where(finite, r, x / np.abs(x))
        r = np.where(m == 0, 0, r)
    return r.astype(x.dtype, copy=False)


def _round(x: np.ndarray) -> np.ndarray:
    return np.rint(x) if x.dtype.kind in "fc" else x.copy()


def _real(x: np.ndarray) -> np.ndarray:
    return x.real.copy() if x.dtype.kind == "c" else x.copy()


def _imag(x: np.ndarray) -> np.ndarray:
    return x.imag.copy() if x.dtype.kind == "c" else np.zeros_like(x)


# -- the table ------------------------------------------------------------------------------
# (name, implementation, parameters, (operator, reflected, in-place), example arguments)
UNARY, BINARY = "x, /", "x1, x2, /"

TABLE: tuple[tuple[str, Any, str, tuple[str, ...], tuple[Any, ...]], ...] = (
    ("abs", np.absolute, UNARY, ("__abs__",), ([-1.5, 2.0],)),
    ("acos", np.arccos, UNARY, (), ([1.0, 0.0],)),
    ("acosh", np.arccosh, UNARY, (), ([1.0, 2.0],)),
    ("add", np.add, BINARY, ("__add__", "__radd__", "__iadd__"), ([1, 2], [3, 4])),
    ("asin", np.arcsin, UNARY, (), ([0.0, 1.0],)),
    ("asinh", np.arcsinh, UNARY, (), ([0.0, 1.0],)),
    ("atan", np.arctan, UNARY, (), ([0.0, 1.0],)),
    ("atan2", np.arctan2, BINARY, (), ([1.0, -1.0], [1.0, 1.0])),
    ("atanh", np.arctanh, UNARY, (), ([0.0, 0.5],)),
    ("bitwise_and", np.bitwise_and, BINARY, ("__and__", "__rand__", "__iand__"),
     ([12, 10], [10, 6])),
    ("bitwise_left_shift", np.left_shift, BINARY, ("__lshift__", "__rlshift__", "__ilshift__"),
     ([1, 3], [2, 1])),
    ("bitwise_invert", np.invert, UNARY, ("__invert__",), ([0, 5],)),
    ("bitwise_or", np.bitwise_or, BINARY, ("__or__", "__ror__", "__ior__"), ([12, 10], [10, 6])),
    ("bitwise_right_shift", np.right_shift, BINARY,
     ("__rshift__", "__rrshift__", "__irshift__"), ([8, 6], [2, 1])),
    ("bitwise_xor", np.bitwise_xor, BINARY, ("__xor__", "__rxor__", "__ixor__"),
     ([12, 10], [10, 6])),
    ("ceil", np.ceil, UNARY, (), ([-1.5, 1.2],)),
    ("clip", None, "x, /, min=None, max=None", (), ([-1.0, 0.5, 3.0], 0.0, 1.0)),
    ("conj", np.conjugate, UNARY, (), ([1 + 2j],)),
    ("copysign", np.copysign, BINARY, (), ([1.0, 2.0], [-1.0, 1.0])),
    ("cos", np.cos, UNARY, (), ([0.0],)),
    ("cosh", np.cosh, UNARY, (), ([0.0],)),
    ("divide", np.true_divide, BINARY, ("__truediv__", "__rtruediv__", "__itruediv__"),
     ([1.0, 3.0], [2.0, 4.0])),
    ("equal", np.equal, BINARY, ("__eq__",), ([1, 2], [1, 3])),
    ("exp", np.exp, UNARY, (), ([0.0],)),
    ("expm1", _expm1, UNARY, (), ([0.0],)),
    ("floor", np.floor, UNARY, (), ([-1.5, 1.2],)),
    ("floor_divide", _floor_divide, BINARY,
     ("__floordiv__", "__rfloordiv__", "__ifloordiv__"), ([7, -7], [2, 2])),
    ("greater", np.greater, BINARY, ("__gt__",), ([1, 2], [2, 1])),
    ("greater_equal", np.greater_equal, BINARY, ("__ge__",), ([1, 2], [2, 2])),
    ("hypot", np.hypot, BINARY, (), ([3.0], [4.0])),
    ("imag", _imag, UNARY, (), ([1 + 2j],)),
    ("isfinite", np.isfinite, UNARY, (), ([1.0, float("inf")],)),
    ("isinf", np.isinf, UNARY, (), ([1.0, float("inf")],)),
    ("isnan", np.isnan, UNARY, (), ([1.0, float("nan")],)),
    ("less", np.less, BINARY, ("__lt__",), ([1, 2], [2, 1])),
    ("less_equal", np.less_equal, BINARY, ("__le__",), ([1, 2], [2, 1])),
    ("log", np.log, UNARY, (), ([1.0],)),
    ("log1p", np.log1p, UNARY, (), ([0.0],)),
    ("log2", np.log2, UNARY, (), ([1.0, 8.0],)),
    ("log10", np.log10, UNARY, (), ([1.0, 100.0],)),
    ("logaddexp", np.logaddexp, BINARY, (), ([0.0], [0.0])),
    ("logical_and", np.logical_and, BINARY, (), ([True, False], [True, True])),
    ("logical_not", np.logical_not, UNARY, (), ([True, False],)),
    ("logical_or", np.logical_or, BINARY, (), ([True, False], [False, False])),
    ("logical_xor", np.logical_xor, BINARY, (), ([True, False], [True, True])),
    ("maximum", np.maximum, BINARY, (), ([1, 5], [3, 2])),
    ("minimum", np.minimum, BINARY, (), ([1, 5], [3, 2])),
    ("multiply", np.multiply, BINARY, ("__mul__", "__rmul__", "__imul__"), ([1, 2], [3, 4])),
    ("negative", np.negative, UNARY, ("__neg__",), ([1, -2],)),
    ("nextafter", np.nextafter, BINARY, (), ([1.0], [2.0])),
    ("not_equal", np.not_equal, BINARY, ("__ne__",), ([1, 2], [1, 3])),
    ("positive", np.positive, UNARY, ("__pos__",), ([1, -2],)),
    ("pow", np.power, BINARY, ("__pow__", "__rpow__", "__ipow__"), ([2, 3], [3, 2])),
    ("real", _real, UNARY, (), ([1 + 2j],)),
    ("reciprocal", np.reciprocal, UNARY, (), ([2.0, 4.0],)),
    ("remainder", np.remainder, BINARY, ("__mod__", "__rmod__", "__imod__"), ([7, -7], [3, 3])),
    ("round", _round, UNARY, (), ([0.5, 1.5, 2.6],)),
    ("sign", _sign, UNARY, (), ([-2.0, 0.0, 3.0],)),
    ("signbit", np.signbit, UNARY, (), ([-0.0, 1.0],)),
    ("sin", np.sin, UNARY, (), ([0.0],)),
    ("sinh", np.sinh, UNARY, (), ([0.0],)),
    ("square", np.square, UNARY, (), ([2, 3],)),
    ("sqrt", np.sqrt, UNARY, (), ([4.0, 9.0],)),
    ("subtract", np.subtract, BINARY, ("__sub__", "__rsub__", "__isub__"), ([5, 7], [1, 2])),
    ("tan", np.tan, UNARY, (), ([0.0],)),
    ("tanh", np.tanh, UNARY, (), ([0.0],)),
    ("trunc", np.trunc, UNARY, (), ([-1.5, 1.5],)),
)

# matmul is a linear-algebra function, but its operators are built the same way.
OPERATOR_ONLY = (("matmul", np.matmul, ("__matmul__", "__rmatmul__", "__imatmul__")),)

# Outputs of the docstring examples (the doctests check them against the code;
# written out so that importing hostarray computes nothing).
_EXAMPLE_OUTPUTS = {
    'abs': 'HostPtrArray([1.5, 2. ], dtype=float64)',
    'acos': 'HostPtrArray([0.        , 1.57079633], dtype=float64)',
    'acosh': 'HostPtrArray([0.       , 1.3169579], dtype=float64)',
    'add': 'HostPtrArray([4, 6], dtype=int64)',
    'asin': 'HostPtrArray([0.        , 1.57079633], dtype=float64)',
    'asinh': 'HostPtrArray([0.        , 0.88137359], dtype=float64)',
    'atan': 'HostPtrArray([0.        , 0.78539816], dtype=float64)',
    'atan2': 'HostPtrArray([ 0.78539816, -0.78539816], dtype=float64)',
    'atanh': 'HostPtrArray([0.        , 0.54930614], dtype=float64)',
    'bitwise_and': 'HostPtrArray([8, 2], dtype=int64)',
    'bitwise_left_shift': 'HostPtrArray([4, 6], dtype=int64)',
    'bitwise_invert': 'HostPtrArray([-1, -6], dtype=int64)',
    'bitwise_or': 'HostPtrArray([14, 14], dtype=int64)',
    'bitwise_right_shift': 'HostPtrArray([2, 3], dtype=int64)',
    'bitwise_xor': 'HostPtrArray([ 6, 12], dtype=int64)',
    'ceil': 'HostPtrArray([-1.,  2.], dtype=float64)',
    'clip': 'HostPtrArray([0. , 0.5, 1. ], dtype=float64)',
    'conj': 'HostPtrArray([1.-2.j], dtype=complex128)',
    'copysign': 'HostPtrArray([-1.,  2.], dtype=float64)',
    'cos': 'HostPtrArray([1.], dtype=float64)',
    'cosh': 'HostPtrArray([1.], dtype=float64)',
    'divide': 'HostPtrArray([0.5 , 0.75], dtype=float64)',
    'equal': 'HostPtrArray([ True, False], dtype=bool)',
    'exp': 'HostPtrArray([1.], dtype=float64)',
    'expm1': 'HostPtrArray([0.], dtype=float64)',
    'floor': 'HostPtrArray([-2.,  1.], dtype=float64)',
    'floor_divide': 'HostPtrArray([ 3, -4], dtype=int64)',
    'greater': 'HostPtrArray([False,  True], dtype=bool)',
    'greater_equal': 'HostPtrArray([False,  True], dtype=bool)',
    'hypot': 'HostPtrArray([5.], dtype=float64)',
    'imag': 'HostPtrArray([2.], dtype=float64)',
    'isfinite': 'HostPtrArray([ True, False], dtype=bool)',
    'isinf': 'HostPtrArray([False,  True], dtype=bool)',
    'isnan': 'HostPtrArray([False,  True], dtype=bool)',
    'less': 'HostPtrArray([ True, False], dtype=bool)',
    'less_equal': 'HostPtrArray([ True, False], dtype=bool)',
    'log': 'HostPtrArray([0.], dtype=float64)',
    'log1p': 'HostPtrArray([0.], dtype=float64)',
    'log2': 'HostPtrArray([0., 3.], dtype=float64)',
    'log10': 'HostPtrArray([0., 2.], dtype=float64)',
    'logaddexp': 'HostPtrArray([0.69314718], dtype=float64)',
    'logical_and': 'HostPtrArray([ True, False], dtype=bool)',
    'logical_not': 'HostPtrArray([False,  True], dtype=bool)',
    'logical_or': 'HostPtrArray([ True, False], dtype=bool)',
    'logical_xor': 'HostPtrArray([False,  True], dtype=bool)',
    'maximum': 'HostPtrArray([3, 5], dtype=int64)',
    'minimum': 'HostPtrArray([1, 2], dtype=int64)',
    'multiply': 'HostPtrArray([3, 8], dtype=int64)',
    'negative': 'HostPtrArray([-1,  2], dtype=int64)',
    'nextafter': 'HostPtrArray([1.], dtype=float64)',
    'not_equal': 'HostPtrArray([False,  True], dtype=bool)',
    'positive': 'HostPtrArray([ 1, -2], dtype=int64)',
    'pow': 'HostPtrArray([8, 9], dtype=int64)',
    'real': 'HostPtrArray([1.], dtype=float64)',
    'reciprocal': 'HostPtrArray([0.5 , 0.25], dtype=float64)',
    'remainder': 'HostPtrArray([1, 2], dtype=int64)',
    'round': 'HostPtrArray([0., 2., 3.], dtype=float64)',
    'sign': 'HostPtrArray([-1.,  0.,  1.], dtype=float64)',
    'signbit': 'HostPtrArray([ True, False], dtype=bool)',
    'sin': 'HostPtrArray([0.], dtype=float64)',
    'sinh': 'HostPtrArray([0.], dtype=float64)',
    'square': 'HostPtrArray([4, 9], dtype=int64)',
    'sqrt': 'HostPtrArray([2., 3.], dtype=float64)',
    'subtract': 'HostPtrArray([4, 5], dtype=int64)',
    'tan': 'HostPtrArray([0.], dtype=float64)',
    'tanh': 'HostPtrArray([0.], dtype=float64)',
    'trunc': 'HostPtrArray([-1.,  1.], dtype=float64)',
}


# -- builders ---------------------------------------------------------------------------------

_ALIGNED_OUT_MIN = 1 << 15  # elements; below this, copying a result into aligned memory is cheaper


def _apply(fn: Any, d: Any, a: Any, b: Any) -> HostPtrArray:
    """``fn(a, b)`` on host operands, the result wrapped on device ``d`` (the hot path of
    every binary function and operator)."""
    if d is not HOST:
        return _on_device(fn, d, a, b)
    r = fn(a, b)
    if type(r) is ndarray:
        return _new(r, Storage(r), HOST)
    return wrap(r, d)


def _on_device(fn: Any, d: Any, *operands: Any) -> HostPtrArray:
    """``fn(*operands)`` as an array on device ``d``.

    A device buffer needs aligned host memory; numpy's results rarely are, and
    ``wrap`` would copy them.  Large element-wise results are therefore computed
    straight into page-aligned memory (``out=``) instead."""
    if (type(fn) is np.ufunc and fn.signature is None
            and max(np.size(o) for o in operands) >= _ALIGNED_OUT_MIN):
        try:
            dt = fn.resolve_dtypes(tuple(o.dtype if isinstance(o, (ndarray, np.generic))
                                         else type(o) for o in operands) + (None,))[-1]
            shape = np.broadcast_shapes(*(np.shape(o) for o in operands))
        except (TypeError, ValueError):
            pass  # let the plain call below raise numpy's own error (or promote oddly)
        else:
            n = dt.itemsize
            for k in shape:
                n *= k
            out = aligned_empty(n).view(dt).reshape(shape)
            fn(*operands, out=out)
            return _new(out, Storage(out), d)
    return wrap(fn(*operands), d)



def _operand_error(x: Any) -> TypeError:
    return TypeError(f"expected a hostarray array or a Python scalar, got {type(x).__name__}")


def _make_unary(fn: Any, name: str) -> Any:
    def unary(x, /):
        if type(x) is HPA:
            s = x._s
            if s.host_stale:
                r = try_device(name, (x,), fn=fn)
                if r is not None:
                    return r
                x._host()
            d = x._device
            if d is not HOST:
                return _on_device(fn, d, x._a)
            r = fn(x._a)
        elif isinstance(x, _OTHER_OPERANDS) or type(x) in _PY_SCALARS:
            r, d = fn(np.asarray(x)), HOST
        else:
            raise _operand_error(x)
        if type(r) is ndarray:
            return _new(r, Storage(r), HOST)
        return wrap(r, d)
    return unary


def _make_binary(fn: Any, name: str) -> Any:
    def binary(x1, x2, /):
        if (type(x1) is HPA and x1._s.host_stale) or (type(x2) is HPA and x2._s.host_stale):
            r = try_device(name, (x1, x2), fn=fn)
            if r is not None:
                return r
        if type(x1) is HPA:
            a = x1._host() if x1._s.host_stale else x1._a
            d = x1._device
            if type(x2) is HPA:
                b = x2._host() if x2._s.host_stale else x2._a
                if x2._device is not d:
                    d = join(d, x2._device)
            elif type(x2) in _PY_SCALARS or isinstance(x2, _OTHER_OPERANDS):
                b = x2
            else:
                raise _operand_error(x2)
        elif type(x2) is HPA:
            if not (type(x1) in _PY_SCALARS or isinstance(x1, _OTHER_OPERANDS)):
                raise _operand_error(x1)
            a = x1
            b = x2._host() if x2._s.host_stale else x2._a
            d = x2._device
        else:
            a, b, d = x1, x2, HOST
        return _apply(fn, d, a, b)
    return binary


def _make_operator(fn: Any, name: str) -> Any:
    def op(self, other, /):
        s = self._s
        if s.host_stale or (type(other) is HPA and other._s.host_stale):
            r = try_device(name, (self, other), fn=fn)
            if r is not None:
                return r
        a = self._host() if s.host_stale else self._a
        d = self._device
        if type(other) is HPA:
            b = other._host() if other._s.host_stale else other._a
            if other._device is not d:
                d = join(d, other._device)
        elif type(other) in _PY_SCALARS or isinstance(other, _OTHER_OPERANDS):
            b = other
        else:
            return NotImplemented
        return _apply(fn, d, a, b)
    return op


def _make_reflected(fn: Any, name: str) -> Any:
    def rop(self, other, /):
        s = self._s
        if s.host_stale or (type(other) is HPA and other._s.host_stale):
            r = try_device(name, (other, self), fn=fn)
            if r is not None:
                return r
        a = self._host() if s.host_stale else self._a
        d = self._device
        if type(other) in _PY_SCALARS or isinstance(other, _OTHER_OPERANDS):
            b = other
        elif type(other) is HPA:  # a direct call: x2.__radd__(x1) is x1 + x2
            if other._device is not d:
                d = join(other._device, d)
            b = other._host()
        else:
            return NotImplemented
        return _apply(fn, d, b, a)
    return rop


# The 0-d results that stand for numpy's scalars (``np.sum(x)``, ``x.max()``: see
# _numpy_spelling), by id: numpy's scalars are immutable, so ``s += 1`` rebinds ``s`` to a new
# result (promoted as numpy promotes) and never changes another name bound to the same one.
_SCALAR_RESULTS: dict[int, weakref.ref[HostPtrArray]] = {}


def mark_scalar(r: Any) -> Any:
    """Give the 0-d ``r`` numpy scalar's in-place semantics (see above); returns ``r``."""
    if type(r) is HPA and r._a.ndim == 0:
        k = id(r)

        def forget(_: object, k: int = k) -> None:
            _SCALAR_RESULTS.pop(k, None)
        _SCALAR_RESULTS[k] = weakref.ref(r, forget)
    return r


def _make_inplace(fn: Any, name: str) -> Any:
    is_ufunc = isinstance(fn, np.ufunc)
    out_of_place = _make_operator(fn, name)

    def iop(self, other, /):
        if _SCALAR_RESULTS and id(self) in _SCALAR_RESULTS:
            return mark_scalar(out_of_place(self, other))
        if type(other) is HPA:
            if other._device is not self._device:
                join(self._device, other._device)
        elif not (type(other) in _PY_SCALARS or isinstance(other, _OTHER_OPERANDS)):
            return NotImplemented
        if not self._a.flags.writeable:  # refused before the coherence state is touched
            raise ValueError("this array is read-only (read-only memory or a broadcast view); "
                             "use the out-of-place operator or a copy")
        if self._s.host_stale or (type(other) is HPA and other._s.host_stale):
            if try_device(name, (self, other), self) is not None:
                return self
        self._s.refuse_host_write(self._a)  # (an open cl_buffer block) before any read
        # under the storage lock from the read of the operand to the last byte written:
        # another thread's launch or whole-storage publish/acquire must not interleave
        with locked((self._s, other._s)) if type(other) is HPA else self._s.lock:
            b = other._host() if type(other) is HPA else other
            with self._writing() as a:
                if is_ufunc:
                    fn(a, b, out=a)
                else:
                    r = fn(a, b)
                    if np.shape(r) != a.shape:
                        raise ValueError(f"in-place operation would change the shape "
                                         f"{a.shape} to {np.shape(r)}")
                    np.copyto(a, r, casting="same_kind")
        return self
    return iop


def _make_unary_operator(fn: Any, name: str) -> Any:
    def op(self, /):
        s = self._s
        if s.host_stale:
            r = try_device(name, (self,), fn=fn)
            if r is not None:
                return r
            self._host()
        d = self._device
        if d is not HOST:
            return _on_device(fn, d, self._a)
        r = fn(self._a)
        if type(r) is ndarray:
            return _new(r, Storage(r), HOST)
        return wrap(r, d)
    return op


def clip(x: HostPtrArray, /, min: HostPtrArray | int | float | None = None,  # noqa: A002
         max: HostPtrArray | int | float | None = None) -> HostPtrArray:  # noqa: A002
    if type(x) is not HPA:
        raise _operand_error(x)
    if device_newest(x) or device_newest(min) or device_newest(max):
        r = try_device("clip", (x, min, max))
        if r is not None:
            return r
    a = x._host()
    d = x._device
    lo = min._host() if type(min) is HPA else min
    hi = max._host() if type(max) is HPA else max
    for bound in (min, max):
        if type(bound) is HPA and bound._device is not d:
            d = join(d, bound._device)
    if lo is None and hi is None:
        return wrap(a.copy(), d)
    r = np.clip(a, lo, hi)
    if r.dtype != a.dtype:  # the result keeps x's data type
        r = r.astype(a.dtype)
    return wrap(r, d)


def _literal(v: Any) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_literal(e) for e in v) + "]"
    if isinstance(v, float) and not np.isfinite(v):
        return "ha.nan" if v != v else ("ha.inf" if v > 0 else "-ha.inf")
    return repr(v)


def _example(name: str, args: tuple[Any, ...]) -> str:
    shown = ", ".join(f"ha.asarray({_literal(v)})" if isinstance(v, list) else _literal(v)
                      for v in args)
    return f">>> import hostarray as ha\n>>> ha.{name}({shown})\n{_EXAMPLE_OUTPUTS[name]}"


def _docstring(name: str, params: str, example: str) -> str:
    n = f"the array API standard's ``{name}``"
    if params == UNARY:
        what = f"Element-wise {name} of ``x``: {n} (numpy's implementation, on ``x``'s device)."
    elif params == BINARY:
        what = (f"Element-wise {name} of ``x1`` and ``x2`` (arrays or Python scalars, "
                f"broadcast): {n}.")
    else:
        what = f"Element-wise {name}: {n}."
    example = "\n".join(("    " + ln) if ln else ln for ln in example.splitlines())
    return f"{what}\n\n    Examples\n    --------\n{example}\n    "


Operand = HostPtrArray | bool | int | float | complex
_UNARY_HINTS = {"x": HostPtrArray, "return": HostPtrArray}
_BINARY_HINTS = {"x1": Operand, "x2": Operand, "return": HostPtrArray}

# BEGIN GENERATED by scripts/gen_stubs.py: do not edit (tests/test_typing.py checks)
if TYPE_CHECKING:  # what _install() builds from TABLE, as a type checker sees it
    def abs(x: HostPtrArray, /) -> HostPtrArray: ...
    def acos(x: HostPtrArray, /) -> HostPtrArray: ...
    def acosh(x: HostPtrArray, /) -> HostPtrArray: ...
    def add(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def asin(x: HostPtrArray, /) -> HostPtrArray: ...
    def asinh(x: HostPtrArray, /) -> HostPtrArray: ...
    def atan(x: HostPtrArray, /) -> HostPtrArray: ...
    def atan2(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def atanh(x: HostPtrArray, /) -> HostPtrArray: ...
    def bitwise_and(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def bitwise_left_shift(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def bitwise_invert(x: HostPtrArray, /) -> HostPtrArray: ...
    def bitwise_or(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def bitwise_right_shift(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def bitwise_xor(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def ceil(x: HostPtrArray, /) -> HostPtrArray: ...
    def conj(x: HostPtrArray, /) -> HostPtrArray: ...
    def copysign(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def cos(x: HostPtrArray, /) -> HostPtrArray: ...
    def cosh(x: HostPtrArray, /) -> HostPtrArray: ...
    def divide(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def equal(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def exp(x: HostPtrArray, /) -> HostPtrArray: ...
    def expm1(x: HostPtrArray, /) -> HostPtrArray: ...
    def floor(x: HostPtrArray, /) -> HostPtrArray: ...
    def floor_divide(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def greater(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def greater_equal(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def hypot(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def imag(x: HostPtrArray, /) -> HostPtrArray: ...
    def isfinite(x: HostPtrArray, /) -> HostPtrArray: ...
    def isinf(x: HostPtrArray, /) -> HostPtrArray: ...
    def isnan(x: HostPtrArray, /) -> HostPtrArray: ...
    def less(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def less_equal(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def log(x: HostPtrArray, /) -> HostPtrArray: ...
    def log1p(x: HostPtrArray, /) -> HostPtrArray: ...
    def log2(x: HostPtrArray, /) -> HostPtrArray: ...
    def log10(x: HostPtrArray, /) -> HostPtrArray: ...
    def logaddexp(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def logical_and(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def logical_not(x: HostPtrArray, /) -> HostPtrArray: ...
    def logical_or(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def logical_xor(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def maximum(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def minimum(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def multiply(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def negative(x: HostPtrArray, /) -> HostPtrArray: ...
    def nextafter(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def not_equal(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def positive(x: HostPtrArray, /) -> HostPtrArray: ...
    def pow(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def real(x: HostPtrArray, /) -> HostPtrArray: ...
    def reciprocal(x: HostPtrArray, /) -> HostPtrArray: ...
    def remainder(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def round(x: HostPtrArray, /) -> HostPtrArray: ...
    def sign(x: HostPtrArray, /) -> HostPtrArray: ...
    def signbit(x: HostPtrArray, /) -> HostPtrArray: ...
    def sin(x: HostPtrArray, /) -> HostPtrArray: ...
    def sinh(x: HostPtrArray, /) -> HostPtrArray: ...
    def square(x: HostPtrArray, /) -> HostPtrArray: ...
    def sqrt(x: HostPtrArray, /) -> HostPtrArray: ...
    def subtract(x1: Operand, x2: Operand, /) -> HostPtrArray: ...
    def tan(x: HostPtrArray, /) -> HostPtrArray: ...
    def tanh(x: HostPtrArray, /) -> HostPtrArray: ...
    def trunc(x: HostPtrArray, /) -> HostPtrArray: ...
# END GENERATED


def _name_code(f: Any, qualname: str) -> None:
    """Give ``f``'s code object its public name too: tracebacks, profiles and the transfer
    guard's log name ``HostPtrArray.__add__``, not ``_make_operator.<locals>.op``."""
    f.__code__ = f.__code__.replace(co_name=qualname.rpartition(".")[2], co_qualname=qualname)


def _install() -> None:
    g = globals()
    for name, fn, params, _, example in TABLE:
        if name == "clip":
            f = clip
        else:
            f = _make_unary(fn, name) if params == UNARY else _make_binary(fn, name)
            f.__annotations__ = dict(_UNARY_HINTS if params == UNARY else _BINARY_HINTS)
        f.__name__ = f.__qualname__ = name
        _name_code(f, name)
        f.__module__ = "hostarray"
        f.__doc__ = _docstring(name, params, _example(name, example))
        g[name] = f
        __all__.append(name)


_install()

_OPERATORS = {name: (fn, params, ops) for name, fn, params, ops, _ in TABLE if ops}
_OPERATORS.update((name, (fn, BINARY, ops)) for name, fn, ops in OPERATOR_ONLY)


def operators(name: str) -> Any:
    """The array's operator methods that the element-wise function ``name`` backs (its
    :data:`TABLE` row, or :data:`OPERATOR_ONLY`'s): one method for a unary operator or a
    comparison (``__neg__``, ``__eq__``), else the operator, its reflected and its
    in-place form (``__add__, __radd__, __iadd__``), as numpy's ``lib.mixins`` makes them."""
    fn, params, dunders = _OPERATORS[name]
    if params == UNARY:
        made = [_make_unary_operator(fn, name)]
    else:
        made = [_make_operator(fn, name)]
        if len(dunders) > 1:
            made += [_make_reflected(fn, name), _make_inplace(fn, name)]
    for dunder, f in zip(dunders, made):
        f.__name__ = dunder
        f.__qualname__ = f"HostPtrArray.{dunder}"
        _name_code(f, f.__qualname__)
        f.__doc__ = (f"``self.{dunder}(...)``: the standard's operator (see the namespace "
                     f"function).")
    return made[0] if len(made) == 1 else tuple(made)
