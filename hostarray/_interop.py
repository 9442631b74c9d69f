"""numpy's protocols for ``HostPtrArray``: ``__array_ufunc__`` and ``__array_function__``.

The array's computing methods (:mod:`hostarray._methods`) delegate here.  The rules:

* numpy computes on the host views the coherence hooks hand out: inputs are
  read through ``x._host()`` (acquiring first when a device wrote last) and
  every array numpy may write (``out=``, ``dst``, in-place functions, ``ufunc.at``,
  ``x.sort()``, ``x.fill()``) in a host write transaction (``x._writing``),
  entered after the inputs were read under the written storages' locks; no raw
  view escapes to the caller (only ``__array__`` and DLPack export hand one out,
  registering an escape: :mod:`hostarray._array`).
* array results come back as ``HostPtrArray`` on the inputs' device (compute
  follows data: :func:`hostarray._placement.result_device`, which also raises
  ``ValueError`` for two different OpenCL devices in one call); results that are
  views of an input stay views of its storage; numpy scalars of numpy's own calls
  stay numpy scalars, as numpy returns them.
* a numpy function, ufunc, ``ufunc.reduce`` or ``ufunc.accumulate`` the namespace has
  with the same meaning (``np.mean(x, axis=0)``, ``np.exp(x)``, ``np.add.reduce(x)``,
  ``np.concatenate`` of HostPtrArrays ...; :mod:`hostarray._numpy_spelling` translates
  numpy's arguments) is the namespace's call, computed where the namespace computes (on
  the device holding the newest data); a full reduction is then a 0-d HostPtrArray.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import _numpy_spelling as _spelling
from ._api.sorting import argsort
from ._api.sorting import sort as _sort
from ._array import HostPtrArray, _view, wrap
from ._devices import Device
from ._placement import result_device
from ._storage import HostWrite, Storage, aligned_empty, host_writes, locked

__all__ = ["array_ufunc", "array_function", "written_arguments", "fill", "sort"]

# -- results -----------------------------------------------------------------------------------

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
    if method == "__call__":
        routed = _spelling.ufunc_call(ufunc, inputs, kwargs)
    elif method == "reduce":
        routed = _spelling.ufunc_reduce(ufunc, inputs, kwargs)
    elif method == "accumulate":
        routed = _spelling.ufunc_accumulate(ufunc, inputs, kwargs)
    else:
        routed = NotImplemented
    if routed is not NotImplemented:  # the namespace's function: where it runs is its rule
        return routed
    dev = result_device(*inputs, *out)
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

_ROUTES: dict[Any, Callable[..., Any]] = {np.sort: _sort, np.argsort: argsort}


def _namespace_route(func: Callable[..., Any], args: tuple[Any, ...],
                     kwargs: dict[str, Any]) -> Any:
    """The hostarray namespace call equivalent to ``func(*args, **kwargs)``, or
    :data:`NotImplemented`: numpy's spellings of the namespace's functions
    (:mod:`hostarray._numpy_spelling`), and ``np.sort``/``np.argsort`` of one HostPtrArray
    along an axis."""
    routed = _spelling.function(func, args, kwargs)
    if routed is not NotImplemented:
        return routed
    try:
        target = _ROUTES.get(func)
    except TypeError:  # an unhashable callable
        return NotImplemented
    if target is not None and len(args) == 1 and set(kwargs) <= {"axis"} \
            and isinstance(args[0], HostPtrArray) and kwargs.get("axis", -1) is not None:
        return target(*args, **kwargs)
    return NotImplemented


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
    if routed is not NotImplemented:
        return routed
    dev = result_device(*args, *kwargs.values())
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


# -- numpy's in-place ndarray methods -----------------------------------------------------------

def sort(x: HostPtrArray, *args: Any, **kwargs: Any) -> None:
    """``x.sort(...)``: one host write transaction (the old contents are read: no skip)."""
    if not x._a.flags.writeable:  # numpy's own error, before the coherence state is touched
        return x._a.sort(*args, **kwargs)
    with x._writing() as a:
        a.sort(*args, **kwargs)


def fill(x: HostPtrArray, value: Any) -> None:
    """``x.fill(value)``: a whole overwrite; stale device data is not acquired when the
    value is a plain value (a string that fails to convert leaves the device's data)."""
    if not x._a.flags.writeable:
        return x._a.fill(value)
    with _locked(_storages_in((value,), [x._s])):
        v = _to_host(value)  # read under the lock (it may be a view of x itself)
        with x._writing(_evaluated(v)) as a:
            a.fill(v)


# pickling is the array's own (hostarray._array); hostarray.dask takes these two from here
from ._array import _rebuild, reduce  # noqa: E402, F401
