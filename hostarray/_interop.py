"""NumPy protocols, DLPack, pickling and Python conveniences for ``HostPtrArray``.

The methods on :class:`~hostarray.HostPtrArray` delegate here.  The rules:

* numpy computes on the host views the coherence hooks hand out: inputs are
  read through ``x._host()`` (acquiring first when a device wrote last) and
  every array numpy may write (``out=``, ``dst``, in-place functions, ``ufunc.at``,
  ``x.sort()``, ``x.fill()``) in a host write transaction (``x._writing``),
  entered after the inputs were read under the written storages' locks; no raw
  view escapes to the caller except through ``__array__`` and DLPack, which
  register an escape.
* array results come back as ``HostPtrArray`` on the inputs' device (compute
  follows data); results that are views of an input stay views of its
  storage; numpy scalars stay numpy scalars, as numpy returns them.
* two different OpenCL devices in one call raise ``ValueError``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ._array import HostPtrArray, _view, adopt, aligned_copy, host_view, wrap
from ._devices import HOST, Device
from ._devices import device as _parse_device
from ._storage import HostWrite, Storage, aligned_empty, host_writes, locked
from .errors import HostPtrError

__all__ = ["from_dlpack", "install_ndarray_methods", "array", "array_ufunc", "array_function",
           "dlpack", "dlpack_device", "reduce", "copy", "deepcopy", "iterate", "length",
           "contains", "format_array", "result_device", "written_arguments"]

KDL_CPU = 1  # DLPack's device type for host memory

# -- devices -----------------------------------------------------------------------------------

def result_device(objs: Any) -> Device:
    """The device results go to: the one non-host device among ``objs``' arrays (looking
    into lists and tuples), else the host.

    Raises ``ValueError`` when arrays on two different non-host devices meet.
    """
    dev = HOST
    for o in objs:
        if isinstance(o, HostPtrArray):
            d = o._device
        elif isinstance(o, (list, tuple)):
            d = result_device(o)
        else:
            continue
        if d.framework != "host" and d != dev:
            if dev.framework != "host":
                raise ValueError(f"arrays on two devices ({dev} and {d}) in one call; move "
                                 f"one with x.to_device(...) first")
            dev = d
    return dev


def _wrap_result(r: Any, dev: Device, sources: list[HostPtrArray]) -> Any:
    """A numpy result as hostarray returns it: arrays wrapped (views of an input's storage
    stay views of it), containers rebuilt, scalars and other objects as they are."""
    if isinstance(r, np.ndarray):
        if type(r) is not np.ndarray:  # e.g. np.matrix, masked arrays: numpy's own types
            return r
        for src in sources:
            if r.size and np.may_share_memory(r, src._s.base):
                return _view(src, r)
        return wrap(r, dev)
    if isinstance(r, tuple):
        items = [_wrap_result(v, dev, sources) for v in r]
        return type(r)(*items) if hasattr(r, "_fields") else tuple(items)
    if isinstance(r, list):
        return [_wrap_result(v, dev, sources) for v in r]
    return r


# -- __array__ ---------------------------------------------------------------------------------

def array(x: HostPtrArray, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
    """``x.__array__``: the host data as numpy, per NumPy 2's ``copy`` rules.

    Without a copy the returned view is an escape (it may be kept and written), so
    handing it out waits for in-flight launches and acquires first."""
    if dtype is not None and np.dtype(dtype) != x.dtype:
        if copy is False:
            raise ValueError(f"converting {x.dtype} to {np.dtype(dtype)} needs a copy; pass "
                             f"copy=None or copy=True")
        return x._host().astype(dtype)
    if copy:
        return x._host().copy()
    return host_view(x)


# -- reading arguments, and which of them numpy writes -----------------------------------------

_ABSENT: Any = object()  # an argument that was not passed
# Values a write can't read late: numpy takes them as they are (``_to_host`` has turned
# HostPtrArrays into host views, read under the written storages' locks, before the write).
_EVALUATED = frozenset((int, float, complex, bool, str, bytes, type(None), slice,
                        type(Ellipsis)))
_EVALUATED_TYPES = (np.generic, np.dtype, type)


def _to_host(v: Any, sources: list[HostPtrArray] | None = None) -> Any:
    """``v`` with every HostPtrArray (also inside lists and tuples) replaced by its host view
    (a host read: acquired first if a device wrote last)."""
    if isinstance(v, HostPtrArray):
        if sources is not None:
            sources.append(v)
        return v._host()
    if type(v) is list or type(v) is tuple:
        return type(v)(_to_host(i, sources) for i in v)
    return v


def _evaluate_callbacks(v: Any) -> Any:
    """``v`` with every object that numpy would convert by calling back into Python
    (``__array__``) converted now, also inside lists and tuples.

    A write holds its storages' locks while numpy runs; such a callback may read
    another HostPtrArray and take *its* lock: out of the global lock order, a
    deadlock with a launch holding both.  So they run before any lock is taken."""
    t = type(v)
    if t is list or t is tuple:
        return t(_evaluate_callbacks(i) for i in v)
    if t in _EVALUATED or isinstance(v, (HostPtrArray, np.ndarray, np.generic)):
        return v
    if hasattr(t, "__array__"):
        return np.asarray(v)
    return v


def _storages_in(values: Any, into: list[Storage]) -> list[Storage]:
    """The storages of the HostPtrArrays among ``values`` (looking into lists and tuples)."""
    for v in values:
        if isinstance(v, HostPtrArray):
            into.append(v._s)
        elif type(v) is list or type(v) is tuple:
            _storages_in(v, into)
    return into


def _all_evaluated(values: Any) -> bool:
    for v in values:
        if type(v) not in _EVALUATED and not _evaluated(v):
            return False
    return True


def _evaluated(v: Any) -> bool:
    """Whether numpy can't read anything late through ``v`` (a value already converted by
    :func:`_to_host`): a number, string, numpy array (not of objects) or scalar, a dtype,
    or lists/tuples of them.  Any other object (one with ``__array__``, a sequence type
    of its own, a callable ...) may read an array while the write runs, so a write next
    to it must not skip the acquire of stale device data."""
    t = type(v)
    if t in _EVALUATED or isinstance(v, _EVALUATED_TYPES):
        return True
    if isinstance(v, np.ndarray):
        return not v.dtype.hasobject
    if t is list or t is tuple:
        return _all_evaluated(v)
    return False


# Parameters numpy writes whenever an array is passed for them (any function).
def _has_text(values: Any) -> bool:
    """Whether ``values`` (read arguments) hold text numpy converts element by element: a
    string array, or strings inside a list.  Such a conversion can raise part-way through
    a write (``np.copyto(x, ["1", "x"], casting="unsafe")`` writes 1.0, then raises), so
    the write must not skip the acquire of stale device bytes.  A lone string argument is
    one value (or a keyword such as ``casting="unsafe"``): it fails before any write."""
    for v in values:
        if isinstance(v, np.ndarray):
            if v.dtype.kind in "SU":
                return True
        elif type(v) is list or type(v) is tuple:
            if any(isinstance(i, (str, bytes)) for i in v) or _has_text(v):
                return True
    return False


_WRITE_NAMES = ("out", "dst", "output")
# In-place functions: the parameter they modify (partly; ``np.copyto``'s dst is above).
_IN_PLACE: dict[Any, str] = {
    np.put: "a", np.place: "arr", np.putmask: "a", np.fill_diagonal: "a",
    np.put_along_axis: "arr",
}
# Flags that make a function write its input: function -> (written parameter, flag, the
# flag's value that writes).  Also any ``overwrite_<name>=True`` (np.median ...), below.
_FLAG_WRITES: dict[Any, tuple[str, str, bool]] = {np.nan_to_num: ("x", "copy", False)}


class _Param:
    """How an argument reaches one parameter: by position (``pos``) and/or by keyword."""

    __slots__ = ("name", "pos", "keyword")

    def __init__(self, name: str, pos: int | None, keyword: bool) -> None:
        self.name, self.pos, self.keyword = name, pos, keyword

    def value(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
        """``(slot, value)`` of the argument passed for this parameter; value ``_ABSENT``
        when none was.  ``slot`` is the position in ``args`` or the keyword."""
        if self.pos is not None and self.pos < len(args):
            return self.pos, args[self.pos]
        if self.keyword and self.name in kwargs:
            return self.name, kwargs[self.name]
        return None, _ABSENT


class _WriteSpec:
    """Which arguments of one function numpy may write.

    ``writes``: ``(parameter, whole, condition)``; ``whole`` when a call overwrites every
    element of that argument (an ``out=``), ``condition`` ``None`` or ``(flag parameter,
    predicate of its value)``.  ``where``: a ``where=`` mask parameter (a masked write is
    not whole).  ``any_positional``: the signature could not be read, so every array
    passed by position counts as written (where in doubt, record a write)."""

    __slots__ = ("writes", "where", "any_positional")

    def __init__(self, writes: list[tuple[_Param, bool, Any]], where: _Param | None,
                 any_positional: bool = False) -> None:
        self.writes, self.where, self.any_positional = writes, where, any_positional


def _write_spec(func: Any) -> _WriteSpec | None:
    """Derive from ``func``'s signature which arguments numpy may write (``None``: none)."""
    import inspect

    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return _WriteSpec([(_Param(n, None, True), False, None) for n in _WRITE_NAMES],
                          _Param("where", None, True), any_positional=True)
    params: dict[str, _Param] = {}
    first: _Param | None = None
    var_keyword = False
    for i, p in enumerate(sig.parameters.values()):
        if p.kind is p.VAR_POSITIONAL:
            continue
        if p.kind is p.VAR_KEYWORD:
            var_keyword = True
            continue
        positional = p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        q = params[p.name] = _Param(p.name, i if positional else None,
                                    p.kind is not p.POSITIONAL_ONLY)
        if first is None:
            first = q
    writes: list[tuple[_Param, bool, Any]] = []
    for name in _WRITE_NAMES:
        w = params.get(name)
        if w is None and var_keyword:
            w = _Param(name, None, True)  # forwarded through **kwargs (e.g. np.clip's)
        if w is not None:
            writes.append((w, name != "output", None))  # recursive_fill_fields: some fields
    target = _IN_PLACE.get(func)
    if target is not None and target in params:
        writes.append((params[target], False, None))
    flag = _FLAG_WRITES.get(func)
    if flag is not None and flag[0] in params and flag[1] in params:
        off = flag[2]
        writes.append((params[flag[0]], False,
                       (params[flag[1]], lambda v, off=off: _flag_is(v, off))))
    for name, q in params.items():
        if name.startswith("overwrite_"):  # overwrite_input=True: numpy may scribble on it
            target_param = params.get(name[len("overwrite_"):], first)
            if target_param is not None:
                writes.append((target_param, False, (q, lambda v: _flag_is(v, True))))
    if not writes:
        return None
    where = params.get("where") or (_Param("where", None, True) if var_keyword else None)
    return _WriteSpec(writes, where)


def _flag_is(v: Any, value: bool) -> bool:
    """Whether the flag argument ``v`` was passed and means ``value`` (in doubt: yes)."""
    if v is _ABSENT:
        return False
    try:
        return bool(v) == value
    except Exception:
        return True


_SPECS: dict[Any, _WriteSpec | None] = {}


def _spec_of(func: Any) -> _WriteSpec | None:
    try:
        return _SPECS[func]
    except KeyError:
        spec = _SPECS[func] = _write_spec(func)
        return spec
    except TypeError:  # an unhashable callable
        return _write_spec(func)


class _Target:
    """One array argument a call may write: where it was passed, and whether the call
    overwrites all of it."""

    __slots__ = ("value", "slot", "index", "whole")

    def __init__(self, value: Any, slot: Any, index: int | None, whole: bool) -> None:
        self.value, self.slot, self.index, self.whole = value, slot, index, whole


def _targets(spec: _WriteSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[_Target]:
    """The arrays (HostPtrArrays and numpy arrays) a call of ``spec``'s function with
    ``args`` and ``kwargs`` may write."""
    found: list[_Target] = []
    masked = False
    if spec.where is not None:
        w = spec.where.value(args, kwargs)[1]
        masked = not (w is _ABSENT or w is True)
    for param, whole, cond in spec.writes:
        if cond is not None and not cond[1](cond[0].value(args, kwargs)[1]):
            continue
        slot, v = param.value(args, kwargs)
        whole = whole and not masked
        if isinstance(v, (HostPtrArray, np.ndarray)):
            found.append(_Target(v, slot, None, whole))
        elif type(v) is tuple:  # out=(a, b)
            found.extend(_Target(o, slot, i, whole) for i, o in enumerate(v)
                         if isinstance(o, (HostPtrArray, np.ndarray)))
    if spec.any_positional:
        found.extend(_Target(v, i, None, False) for i, v in enumerate(args)
                     if isinstance(v, HostPtrArray))
    return found


def written_arguments(func: Any, args: tuple[Any, ...],
                      kwargs: dict[str, Any]) -> list[HostPtrArray]:
    """The HostPtrArrays that ``func(*args, **kwargs)`` may write (numpy functions served
    by ``__array_function__``; derived from ``func``'s signature, cached per function)."""
    spec = _spec_of(func)
    if spec is None:
        return []
    return [t.value for t in _targets(spec, args, kwargs) if isinstance(t.value, HostPtrArray)]


def _unique_storages(arrays: list[HostPtrArray]) -> bool:
    return len(arrays) == 1 or len({id(a._s) for a in arrays}) == len(arrays)


class _OneWrite:
    """``host_writes`` for one transaction, without a generator's cost (this runs on
    every numpy call that writes a HostPtrArray): yields ``[view]``."""

    __slots__ = ("tx",)

    def __init__(self, tx: HostWrite) -> None:
        self.tx = tx

    def __enter__(self) -> list[Any]:
        return [self.tx.__enter__()]

    def __exit__(self, *exc: Any) -> None:
        self.tx.__exit__(*exc)


def _locked(storages: list[Storage]) -> Any:
    """Hold the locks of ``storages`` (``_storage.locked``: one global order); one
    storage's lock directly, the common case."""
    first = storages[0]
    for s in storages:
        if s is not first:
            return locked(storages)
    return first.lock


def _transactions(txs: list[HostWrite]) -> Any:
    """Enter the host write transactions ``txs`` (locks in one global order); the
    context yields their views."""
    return _OneWrite(txs[0]) if len(txs) == 1 else host_writes(txs)


# -- __array_ufunc__ ---------------------------------------------------------------------------

_PLAIN = frozenset({HostPtrArray, np.ndarray, int, float, complex, bool, type(None)})


def _foreign(v: Any) -> bool:
    """Whether ``v`` is an array type of another library that should handle the call."""
    return type(v) not in _PLAIN and hasattr(v, "__array_ufunc__") \
        and not isinstance(v, (HostPtrArray, np.ndarray, np.generic))


def _aligned_outputs(ufunc: np.ufunc, args: list[Any], kwargs: dict[str, Any],
                     dev: Device) -> tuple[np.ndarray, ...] | None:
    """Outputs for a ``ufunc.__call__`` on a device, allocated in aligned storage so that
    wrapping them needs no copy; ``None`` where numpy's own resolution is safer."""
    if dev.framework == "host" or "dtype" in kwargs or "signature" in kwargs \
            or ufunc.signature is not None:
        return None
    dts: list[Any] = []
    for a in args:
        if isinstance(a, (np.ndarray, np.generic)):
            dts.append(a.dtype)
        elif type(a) is bool:
            dts.append(np.dtype(bool))
        elif type(a) in (int, float, complex):
            dts.append(type(a))
        else:
            return None
    try:
        resolved = ufunc.resolve_dtypes((*dts, *([None] * ufunc.nout)),
                                        casting=kwargs.get("casting", "same_kind"))
        shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    except (TypeError, ValueError, np.exceptions.DTypePromotionError):
        return None
    if not shape:
        return None  # numpy returns scalars for 0-d calls
    n = int(np.prod(shape))
    return tuple(aligned_empty(n * dt.itemsize).view(dt).reshape(shape)
                 for dt in resolved[ufunc.nin:])


_UFUNC_READS = ("where", "initial")  # keyword arguments of ufunc methods that hold values


def _kwargs_to_host(kwargs: dict[str, Any]) -> None:
    for k in _UFUNC_READS:
        if k in kwargs:
            kwargs[k] = _to_host(kwargs[k])


def array_ufunc(x: HostPtrArray, ufunc: np.ufunc, method: str, *inputs: Any,
                **kwargs: Any) -> Any:
    """``x.__array_ufunc__``: every ufunc and method on host views, results as HostPtrArrays.

    A call that writes a HostPtrArray (``out=``, ``ufunc.at``) is one host write
    transaction per written array, entered after every input was read under the
    written storages' locks: a launch from another thread can't slip in between the
    read and the write, and stale device data is acquired unless the call overwrites
    the whole array with values that can't read it late."""
    out = kwargs.get("out", ())
    for v in (*inputs, *out):
        if _foreign(v):
            return NotImplemented
    dev = result_device((*inputs, *out))
    at = method == "at"
    if at:
        written = [inputs[0]] if isinstance(inputs[0], HostPtrArray) else []
    else:
        written = [o for o in out if isinstance(o, HostPtrArray)]
    if not written:
        args = [_to_host(v) for v in inputs]
        if len(kwargs) > ("out" in kwargs):
            _kwargs_to_host(kwargs)
        if method == "__call__" and not out:
            outs = _aligned_outputs(ufunc, args, kwargs, dev)
            if outs is not None:
                kwargs["out"] = outs
        result = getattr(ufunc, method)(*args, **kwargs)
    else:
        for w in written:  # (an open cl_buffer block) before any input is read
            w._s.refuse_host_write(w._a)
        inputs = tuple(_evaluate_callbacks(v) for v in inputs)
        for k in _UFUNC_READS:  # where=, initial=: callbacks run before any lock too
            if k in kwargs:
                kwargs[k] = _evaluate_callbacks(kwargs[k])
        storages = _storages_in(inputs, [o._s for o in written])
        others = len(kwargs) > ("out" in kwargs)  # keywords besides out=
        if others:
            _storages_in([kwargs[k] for k in _UFUNC_READS if k in kwargs], storages)
        # one global lock order for every storage the call touches; reads first, so an
        # output that is also an input is acquired before it is written
        with _locked(storages):
            args = [_to_host(v) for v in inputs[1:]] if at else [_to_host(v) for v in inputs]
            if others:
                _kwargs_to_host(kwargs)
            whole = (not at and _all_evaluated(args) and not _has_text(args)
                     and _unique_storages(written)
                     and (not others or (kwargs.get("where", True) is True
                                         and _evaluated(kwargs.get("initial")))))
            with _transactions([o._writing(whole) for o in written]) as views:
                if at:
                    args.insert(0, views[0])
                elif len(out) == 1:
                    kwargs["out"] = (views[0],)
                else:
                    it = iter(views)
                    kwargs["out"] = tuple(next(it) if isinstance(o, HostPtrArray) else o
                                          for o in out)
                result = getattr(ufunc, method)(*args, **kwargs)
    if at:
        return None
    results = result if ufunc.nout > 1 and method == "__call__" else (result,)
    wrapped = []
    for i, r in enumerate(results):
        o = out[i] if i < len(out) else None
        if isinstance(o, HostPtrArray):
            wrapped.append(o)
        elif o is not None:
            wrapped.append(r)  # a numpy out= array is returned as numpy returns it
        else:  # a fresh result: ufuncs return views of their inputs only through out=
            wrapped.append(wrap(r, dev) if type(r) is np.ndarray else r)
    return wrapped[0] if len(wrapped) == 1 else tuple(wrapped)


# -- __array_function__ ------------------------------------------------------------------------

def _namespace_route(func: Callable[..., Any], args: tuple[Any, ...],
                     kwargs: dict[str, Any]) -> Any:
    """The hostarray namespace call equivalent to ``func(*args, **kwargs)``, or ``None``.

    Only calls whose meaning is the same in numpy and in the standard are routed:
    every array argument a HostPtrArray, no numpy-only keyword."""
    import hostarray as ha

    def ours(*vs: Any) -> bool:
        return all(isinstance(v, HostPtrArray) for v in vs)

    name: str | None = None
    call_args: tuple[Any, ...] = ()
    call_kwargs: dict[str, Any] = {}
    if func is np.concatenate and len(args) == 1 and set(kwargs) <= {"axis"} \
            and isinstance(args[0], (list, tuple)) and args[0] and ours(*args[0]):
        name, call_args = "concat", (tuple(args[0]),)
        call_kwargs = {"axis": kwargs.get("axis", 0)}
    elif func is np.stack and len(args) == 1 and set(kwargs) <= {"axis"} \
            and isinstance(args[0], (list, tuple)) and args[0] and ours(*args[0]):
        name, call_args, call_kwargs = "stack", (tuple(args[0]),), dict(kwargs)
    elif func is np.where and len(args) == 3 and not kwargs and ours(*args):
        name, call_args = "where", args
    elif func in (np.sort, np.argsort) and len(args) == 1 and set(kwargs) <= {"axis"} \
            and ours(args[0]) and kwargs.get("axis", -1) is not None:
        name, call_args, call_kwargs = func.__name__, args, dict(kwargs)
    elif func is np.expand_dims and ours(args[0]) and len(args) + len(kwargs) == 2 \
            and isinstance(args[1] if len(args) > 1 else kwargs.get("axis"), int):
        name, call_args = "expand_dims", (args[0],)
        call_kwargs = {"axis": args[1] if len(args) > 1 else kwargs["axis"]}
    if name is None:
        return None
    target = getattr(ha, name, None)
    if target is None:
        return None
    return target(*call_args, **call_kwargs)


def array_function(x: HostPtrArray, func: Callable[..., Any], types: tuple[type, ...],
                   args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``x.__array_function__``: through the namespace where it has a matching function,
    otherwise numpy's own function on host views, array results wrapped back.

    The arguments numpy may write (``out=``, ``dst``, the array of an in-place function
    such as ``np.put``, ``x`` of ``np.nan_to_num(x, copy=False)`` ..., by position or
    keyword: see :func:`written_arguments`) are written in host write transactions,
    entered after every other argument was read under the written storages' locks."""
    for tp in types:
        if not issubclass(tp, (HostPtrArray, np.ndarray)):
            return NotImplemented
    routed = _namespace_route(func, args, kwargs)
    if routed is not None:
        return routed
    dev = result_device((*args, *kwargs.values()))
    sources: list[HostPtrArray] = []
    try:
        spec = _SPECS[func]
    except (KeyError, TypeError):
        spec = _spec_of(func)
    targets = _targets(spec, args, kwargs) if spec is not None else []
    ours = [t for t in targets if isinstance(t.value, HostPtrArray)]
    if not ours:
        result = func(*[_to_host(a, sources) for a in args],
                      **{k: _to_host(v, sources) for k, v in kwargs.items()})
    else:
        for t in ours:  # (an open cl_buffer block) before any argument is read
            t.value._s.refuse_host_write(t.value._a)
        slots = {t.slot for t in ours}
        args = tuple(a if i in slots else _evaluate_callbacks(a) for i, a in enumerate(args))
        kwargs = {k: v if k in slots else _evaluate_callbacks(v) for k, v in kwargs.items()}
        storages = _storages_in(args, [])
        _storages_in(kwargs.values(), storages)
        # one global lock order for every storage the call touches; reads first, so a
        # written argument that is also read is acquired before it is written
        with _locked(storages):
            hargs = [a if i in slots else _to_host(a, sources) for i, a in enumerate(args)]
            hkwargs = {k: v if k in slots else _to_host(v, sources) for k, v in kwargs.items()}
            read = [v for i, v in enumerate(hargs) if i not in slots]
            read.extend(v for k, v in hkwargs.items() if k not in slots)
            evaluated = _all_evaluated(read) and not _has_text(read)
            arrays = [t.value for t in ours]
            unique = _unique_storages(arrays)
            with _transactions([t.value._writing(t.whole and evaluated and unique)
                                for t in ours]) as views:
                seqs: dict[Any, list[Any]] = {}
                for t, view in zip(ours, views):
                    if t.index is None:
                        _put(hargs, hkwargs, t.slot, view)
                    else:  # out=(a, b): the tuple rebuilt with host views
                        seq = seqs.get(t.slot)
                        if seq is None:
                            seq = seqs[t.slot] = list(args[t.slot] if type(t.slot) is int
                                                      else kwargs[t.slot])
                        seq[t.index] = view
                for slot, seq in seqs.items():
                    _put(hargs, hkwargs, slot, tuple(seq))
                result = func(*hargs, **hkwargs)
            for t, view in zip(ours, views):
                if result is view:
                    return t.value
            sources.extend(arrays)
    if isinstance(result, np.ndarray) and any(result is t.value for t in targets):
        return result  # a numpy out= array comes back as numpy returns it
    return _wrap_result(result, dev, sources)


def _put(hargs: list[Any], hkwargs: dict[str, Any], slot: Any, value: Any) -> None:
    if type(slot) is int:
        hargs[slot] = value
    else:
        hkwargs[slot] = value


# -- DLPack ------------------------------------------------------------------------------------

def dlpack_device(x: HostPtrArray) -> tuple[int, int]:
    """``x.__dlpack_device__``: always host memory, ``(kDLCPU, 0)``."""
    return (KDL_CPU, 0)


def dlpack(x: HostPtrArray, *, stream: Any = None, max_version: tuple[int, int] | None = None,
           dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
    """``x.__dlpack__``: export the host bytes (acquired first) as a DLPack capsule.

    Without a copy the consumer holds a pointer into ``x``'s memory and may write through
    it, so the export is an escape for as long as the consumer keeps it."""
    if stream is not None:
        raise BufferError("hostarray arrays live in host memory: DLPack stream must be None")
    if dl_device is not None and tuple(dl_device) != (KDL_CPU, 0):
        raise BufferError(f"hostarray exports host memory only (dl_device=({KDL_CPU}, 0)), "
                          f"not {tuple(dl_device)}")
    if copy:
        src: np.ndarray = x._host()
    else:
        src = host_view(x)
        if not x._a.flags.writeable:
            src.flags.writeable = False
    return src.__dlpack__(max_version=max_version, copy=copy)


def from_dlpack(x: Any, /, *, device: Device | str | None = None,
                copy: bool | None = None) -> HostPtrArray:
    """An array over the data of any object with ``__dlpack__`` (numpy, PyTorch on CPU, ...).

    The memory is adopted without a copy where it can be: always on the host,
    and on an OpenCL device when it is one contiguous range whose address is a
    multiple of ``max(device.host_alignment, itemsize)`` (the host alignment is
    probed per device: 1 byte on PoCL, so any element-aligned memory).
    Otherwise the data is copied into page-aligned storage (and ``copy=False``
    raises ``BufferError``).  ``copy=True`` always copies, into page-aligned
    storage.  Producers whose data is not in host memory raise ``BufferError``.

    Memory that belongs to a ``HostPtrArray`` (a DLPack export of it, passed on
    through other libraries) gives a view of that array: one memory range has
    one coherence state.  Other adopted memory stays the producer's: while it
    is held elsewhere, launches publish before and acquire after.

    Parameters
    ----------
    x : object
        An object implementing ``__dlpack__`` and ``__dlpack_device__``.
    device : Device or str, optional
        Where the result lives; ``None`` means the host (DLPack data here is
        always host memory).
    copy : bool, optional
        ``True``: always copy; ``False``: never copy; ``None``: copy only if needed.

    Returns
    -------
    HostPtrArray

    Examples
    --------
    >>> import numpy as np, hostarray as ha
    >>> a = np.arange(6.0).reshape(2, 3)
    >>> x = ha.from_dlpack(a)
    >>> np.shares_memory(np.asarray(x), a)
    True
    >>> ha.from_dlpack(a, copy=True)[0, 1]
    HostPtrArray(1., dtype=float64)
    """
    if isinstance(x, HostPtrArray):  # device=None keeps x's device, as the standard says
        dev = x._device if device is None else _parse_device(device)
        if copy:
            return wrap(aligned_copy(x._host()), dev)
        if dev == x._device:
            return x
        if copy is False and dev.framework != "host" and not _shares_ok(x._s, dev):
            raise BufferError(f"this array's memory can't be shared with {dev} without a copy")
        return x.to_device(dev)
    dev = HOST if device is None else _parse_device(device)
    if not hasattr(x, "__dlpack__"):
        # AttributeError: the standard's error for an object without __dlpack__
        raise AttributeError(f"a {type(x).__name__} does not implement __dlpack__; convert it "
                             f"with ha.asarray")
    if dev.framework not in ("host", "opencl"):
        raise BufferError(f"from_dlpack can place data on the host or an OpenCL device, "
                          f"not {dev}")
    try:
        a = np.from_dlpack(x, copy=False if copy is False else None)
    except ValueError as e:  # numpy's way of saying a copy is unavoidable
        raise BufferError(str(e)) from None
    if a.dtype.kind not in "biufc":
        raise TypeError(f"hostarray holds bool and numeric data only, not {a.dtype}")
    if copy:
        return wrap(aligned_copy(a), dev)
    from ._array import adopt
    return adopt(a, dev, copy, BufferError)


def _shares_ok(s: Storage, dev: Device) -> bool:
    """Whether ``x.to_device(dev)`` keeps ``s``'s memory (no copy): the one decision in
    :mod:`hostarray._sharing`."""
    from ._sharing import copy_needed
    return copy_needed(s.base, dev) is None


# -- pickling and copies -----------------------------------------------------------------------

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


def copy(x: HostPtrArray) -> HostPtrArray:
    """``copy.copy(x)``: a new array with a copy of the data, on the same device (as numpy);
    copied by that device where it holds the newest data (nothing acquired)."""
    if x._s.host_stale:
        from ._api.data_types import device_astype

        r = device_astype(x, x._a.dtype)
        if r is not None:
            return r
    return wrap(aligned_copy(x._host()), x._device)


def deepcopy(x: HostPtrArray, memo: dict[int, Any]) -> HostPtrArray:
    """``copy.deepcopy(x)``: like :func:`copy` (the elements are plain numbers)."""
    r = copy(x)
    memo[id(x)] = r
    return r


# -- Python conveniences -----------------------------------------------------------------------

def length(x: HostPtrArray) -> int:
    """``len(x)``: the first dimension; a 0-d array has none (``TypeError``, as numpy)."""
    if x.ndim == 0:
        raise TypeError("len() of a 0-d array")
    return x.shape[0]


def iterate(x: HostPtrArray) -> Any:
    """``iter(x)``: numpy scalars for a 1-D array (as numpy), views along axis 0 otherwise."""
    if x.ndim == 0:
        raise TypeError("iteration over a 0-d array")
    if x.ndim == 1:
        return iter(x._host().copy())  # a snapshot: later kernel writes don't race the loop
    return (_view(x, x._host()[i]) for i in range(x.shape[0]))


def contains(x: HostPtrArray, value: Any) -> bool:
    """``value in x``: whether any element equals ``value`` (numpy's rule)."""
    v = value._host() if isinstance(value, HostPtrArray) else value
    return bool((x._host() == v).any())


def format_array(x: HostPtrArray, spec: str) -> str:
    """``format(x, spec)``: a 0-d array formats like its element; an empty spec gives ``str``."""
    if not spec:
        return str(x)
    if x.ndim == 0:
        return format(x._host().item(), spec)
    raise TypeError(f"unsupported format string {spec!r} for a {x.ndim}-d HostPtrArray; format "
                    f"its elements, e.g. with x.tolist()")


# -- numpy's ndarray methods ---------------------------------------------------------------

def _ha() -> Any:
    import hostarray

    return hostarray


def _shape_args(args: tuple[Any, ...]) -> Any:
    """``x.reshape(2, 3)`` and ``x.reshape((2, 3))`` mean the same (as in numpy)."""
    return args[0] if len(args) == 1 else args


def _sort_in_place(x: HostPtrArray, *args: Any, **kwargs: Any) -> None:
    """``x.sort(...)``: one host write transaction (the old contents are read: no skip)."""
    if not x._a.flags.writeable:  # numpy's own error, before the coherence state is touched
        return x._a.sort(*args, **kwargs)
    with x._writing() as a:
        a.sort(*args, **kwargs)


def _fill(x: HostPtrArray, value: Any) -> None:
    """``x.fill(value)``: a whole overwrite; stale device data is not acquired when the
    value is a plain value (a string that fails to convert leaves the device's data)."""
    if not x._a.flags.writeable:
        return x._a.fill(value)
    with _locked(_storages_in((value,), [x._s])):
        v = _to_host(value)  # read under the lock (it may be a view of x itself)
        with x._writing(_evaluated(v)) as a:
            a.fill(v)


def _astype_method(x: HostPtrArray, dtype: Any, *args: Any, **kwargs: Any) -> HostPtrArray:
    """``x.astype(dtype)``: converted by the device holding the newest data where it can
    (as ``ha.astype``), else numpy's ``astype`` on the host data."""
    dt = np.dtype(dtype)
    if dt == x.dtype and not kwargs.get("copy", True):
        return x
    if x._s.host_stale and not args and set(kwargs) <= {"copy"}:
        from ._api.data_types import device_astype

        r = device_astype(x, dt)
        if r is not None:
            return r
    numpy_astype: Any = np.astype  # numpy's overloads don't know HostPtrArray
    return numpy_astype(x, dtype, *args, **kwargs)


def _view_as(x: HostPtrArray, dtype: Any = None) -> HostPtrArray:
    a = x._host()
    return _view(x, a.view() if dtype is None else a.view(dtype))


_METHODS: dict[str, Callable[..., Any]] = {
    # views read nothing: through the namespace, which makes them without an acquire
    "reshape": lambda x, *shape, **kw: np.reshape(x, _shape_args(shape), **kw) if kw
    else _ha().reshape(x, _shape_args(shape)),
    "transpose": lambda x, *axes: _ha().permute_dims(
        x, tuple(_shape_args(axes)) if axes and axes != (None,) else tuple(range(x.ndim))[::-1]),
    "swapaxes": np.swapaxes, "squeeze": np.squeeze, "ravel": np.ravel,
    "flatten": lambda x, order="C": wrap(x._host().flatten(order), x._device),
    "astype": _astype_method,
    "copy": lambda x, order="C": copy(x),
    "view": _view_as, "sort": _sort_in_place, "fill": _fill,
    "sum": np.sum, "prod": np.prod, "mean": np.mean, "std": np.std, "var": np.var,
    "min": np.min, "max": np.max, "argmin": np.argmin, "argmax": np.argmax,
    "any": np.any, "all": np.all, "cumsum": np.cumsum, "cumprod": np.cumprod,
    # ndarray.clip(min=None, max=None, out=None): one bound is enough (np.clip wants both)
    "clip": lambda x, min=None, max=None, out=None, **kw: np.clip(x, min, max, out=out, **kw),
    "round": np.round, "dot": np.dot, "nonzero": np.nonzero,
    "argsort": np.argsort, "searchsorted": np.searchsorted, "take": np.take,
    "repeat": np.repeat, "diagonal": np.diagonal, "trace": np.trace,
    # ndarray.compress(condition, ...) but np.compress(condition, a, ...)
    "compress": lambda x, condition, *a, **kw: np.compress(condition, x, *a, **kw),
    "conj": np.conjugate, "conjugate": np.conjugate,
}
_ATTRIBUTES: dict[str, Callable[[HostPtrArray], Any]] = {
    "real": np.real, "imag": np.imag, "itemsize": lambda x: x.dtype.itemsize,
    "strides": lambda x: x._a.strides,
}

# a runnable example per method and attribute (docstrings; tests/test_docs.py runs them)
_EXAMPLES: dict[str, list[tuple[str, str]]] = {
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
    body = "".join(f"    >>> {src}\n    {out}\n" for src, out in _EXAMPLES[name])
    return f"\n\n    Examples\n    --------\n    >>> import hostarray as ha\n{body}"


def _method(name: str, f: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: HostPtrArray, *args: Any, **kwargs: Any) -> Any:
        return f(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"numpy's ``ndarray.{name}``; array results are HostPtrArrays on the "
                      f"same device.{_examples(name)}")
    method.__module__ = HostPtrArray.__module__  # its doctest runs with the class's
    method._ndarray_method = True  # type: ignore[attr-defined]  # (docs/_ext: its entry)
    return method


def install_ndarray_methods(cls: type) -> None:
    """Give ``cls`` numpy's ``ndarray`` methods and attributes it lacks (``x.reshape``,
    ``x.sum``, ``x.astype``, ``x.real`` ...), on host views with results wrapped back.

    Real class attributes, not ``__getattr__``: numpy probes arrays for missing
    attributes (``__array_interface__``...) on every conversion, and a Python
    ``__getattr__`` would slow each probe down."""
    for name, f in _METHODS.items():
        if name not in cls.__dict__:
            setattr(cls, name, _method(name, f))
    for name, g in _ATTRIBUTES.items():
        if name not in cls.__dict__:
            setattr(cls, name, property(g, doc=f"numpy's ``ndarray.{name}``.{_examples(name)}"))


install_ndarray_methods(HostPtrArray)
