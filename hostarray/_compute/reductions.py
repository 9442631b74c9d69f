# Over 700 lines: one source generator for every reduction, its schedules, and fused inputs.
"""Reductions on the device: sums, products, extrema, arg-extrema, any/all, means,
variances, vector dot products and norms, and cumulative sums and products.

Every reduction is one generated kernel over a *layout*: the operand's axes are
split into kept axes (the result's, in order) and reduced axes, with element
strides for each (the reduced axes are moved last by strides, nothing is
copied; length-1 axes are dropped and neighbouring axes merged).  Three
schedules, by the number of results ``n`` and the reduced extent ``m``:

* ``seq``: one work-item per result, a sequential loop (short ``m`` or many
  results);
* ``group``: one work-group of :data:`~hostarray._compute.launch.GROUP` items
  per result, a strided loop and a tree in local memory;
* two passes when there are few results: pass 1 splits each result's range over
  ``P`` groups that write partial states to pooled temporaries, pass 2 reduces
  the ``P`` partials with one group per result (the whole-array case uses the
  whole device).

Arg-extrema carry (value, index) pairs ordered by value, then index (numpy's
first occurrence; a NaN wins over numbers and the first NaN over later ones).

The data types are numpy's: the result type comes from numpy itself (the
method called on a one-element array of the operand's type and dimensions);
accumulation is in the result type as numpy's loop does (integer arithmetic
wraps).  What stays on the host: empty operands (numpy's identities and
errors), complex and float16 data, a ``dtype=`` that converts floats to
integers, ``correction`` leaving no degree of freedom, and invalid arguments
(the host path raises numpy's error).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._array import HostPtrArray
from .._devices import Device
from .._launch import PENDING
from .._stats import COUNTERS
from .._storage import locked
from . import fusion, pool, register
from .kernel_text import _layout
from .launch import GROUP, ArrayArg, array_arg, c_type, compiled, enqueue, supports

__all__ = ["cumulative", "reduction"]

HPA = HostPtrArray
_SEQ_MAX = 64          # reduced extents up to this: one work-item per result
_SEQ_RESULTS = 16384   # this many results or more: one work-item per result
_GROUPS = 1024         # groups a reduction with few results aims at (two passes)

_BITS = {"char": 8, "uchar": 8, "short": 16, "ushort": 16, "int": 32, "uint": 32,
         "long": 64, "ulong": 64}


# -- C text ---------------------------------------------------------------------------------

def _literal(v: Any, t: str) -> str:
    """``v`` as a C constant of type ``t``."""
    if t in ("float", "double"):
        if math.isinf(v):
            return "(A)INFINITY" if v > 0 else "(A)(-INFINITY)"
        return f"(A){float(v)!r}"
    v = int(v)
    if t == "long" and v == -(1 << 63):
        return "(A)(-9223372036854775807L - 1)"
    return f"(A){v}{'UL' if v > 0 else 'L'}"


def _identity(op: str, acc: np.dtype) -> Any:
    """The identity of ``op`` in type ``acc`` (for max/min: the lowest/highest value)."""
    low = op in ("max", "argmax")
    if op in ("add", "or"):
        return 0
    if op in ("mul", "and"):
        return 1
    if acc.kind == "f":
        return -math.inf if low else math.inf
    if acc.kind == "b":
        return 0 if low else 1
    info = np.iinfo(acc)
    return info.min if low else info.max


def _combine(op: str, acc: np.dtype) -> str:
    """``COMBINE(av, ai, bv, bi)``: fold the state ``(bv, bi)`` into ``(av, ai)``."""
    k = acc.kind
    if op in ("argmax", "argmin"):
        cmp = ">" if op == "argmax" else "<"
        if k == "f":
            better = (f"((isnan(bv) && !isnan(av)) || (bv {cmp} av) || "
                      f"((bv == av || (isnan(bv) && isnan(av))) && bi < ai))")
        else:
            better = f"((bv {cmp} av) || (bv == av && bi < ai))"
        return (f"#define COMBINE(av, ai, bv, bi) if ({better}) {{ av = bv; ai = bi; }}\n")
    if k == "b" or op in ("or", "and"):
        e = {"add": "x | y", "or": "x | y", "max": "x | y",
             "mul": "x & y", "and": "x & y", "min": "x & y"}[op]
    elif op in ("add", "mul"):
        sym = "+" if op == "add" else "*"
        e = f"x {sym} y" if k == "f" else f"(A)((WA)(UA)x {sym} (WA)(UA)y)"
    elif k == "f":
        # NaN wins; on a tie (-0.0 and 0.0) the later element, as numpy's maximum and
        # minimum return their second operand (x holds the earlier elements, y the later)
        cmp = ">" if op == "max" else "<"
        e = f"((x {cmp} y || isnan(x)) ? x : y)"
    else:
        e = f"(x {'>=' if op == 'max' else '<='} y ? x : y)"
    return (f"#define OP(x, y) ({e})\n"
            "#define COMBINE(av, ai, bv, bi) av = OP(av, bv)\n")


def _convert(v: str, src: str, dst: str, dst_bool: bool) -> str:
    """C text converting ``v`` of C type ``src`` to ``dst`` (to bool: nonzero test)."""
    if dst_bool:
        return f"(uchar)({v} != 0)"
    return v if src == dst else f"({dst})({v})"


def _prelude(acc: np.dtype, types: list[str]) -> str:
    a = c_type(acc)
    u = "u" + a if a in ("char", "short", "int", "long") else a
    w = "ulong" if a in ("long", "ulong") else ("uint" if a in _BITS else a)
    head = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if "double" in types + [a] else ""
    return head + f"#define A {a}\n#define UA {u}\n#define WA {w}\n"


class Spec:
    """What a reduction kernel computes: ``op`` over ``map`` of the loaded inputs
    (converted to ``load``), then ``epilogue`` (C over ``acc``/``idx`` and the scalar
    ``q``) into ``out``."""

    __slots__ = ("op", "acc", "load", "map", "epilogue", "out", "mu", "q")

    def __init__(self, op: str, acc: np.dtype, load: np.dtype, out: np.dtype,
                 map_: str = "a", epilogue: str = "acc", mu: bool = False,
                 q: np.dtype | None = None) -> None:
        self.op, self.acc, self.load, self.out = op, acc, load, out
        self.map, self.epilogue, self.mu, self.q = map_, epilogue, mu, q


def _source(spec: Spec, ins: list[np.dtype], nk: int, nr: int, mode: str, final: bool,
            idx_in: bool, progs: Sequence[Any] = (), fp64: bool = True) -> str:
    """OpenCL C of a reduction kernel ``red`` (see the module); ``progs``: per input, the
    pending program folded in (its leaves are the kernel's arrays), or ``None``."""
    arg = spec.op in ("argmax", "argmin")
    a_t, l_t = c_type(spec.acc), c_type(spec.load)
    o_t = c_type(spec.out) if final else a_t
    progs = list(progs) or [None] * len(ins)
    inputs = "ab"[:len(ins)]
    names: list[str] = []  # the arrays: an input, or its program's leaves
    array_types: list[str] = []
    params = ["const long nout", "const long m", f"__global {o_t} *out", "const long o_off"]
    if arg and not final:
        params.append("__global long *oidx")
    for v, dt, prog in zip(inputs, ins, progs):
        if prog is None:
            arrays = [(v, c_type(dt))]
        else:
            arrays = [(f"{v}{j}", c_type(w.x._a.dtype)) for j, w in enumerate(prog.leaves)]
        for w, ct in arrays:
            names.append(w)
            array_types.append(ct)
            params += [f"__global const {ct} *p{w}", f"const long {w}_off"]
            params += [f"const long {w}_k{j}" for j in range(nk)]
            params += [f"const long {w}_r{j}" for j in range(nr)]
        if prog is not None:
            params += [f"const {c_type(sv.dtype)} {v}s{j}" for j, sv in enumerate(prog.scalars)]
    params += [f"const long kd{j}" for j in range(nk)] + [f"const long rd{j}" for j in range(nr)]
    if idx_in:
        params.append("__global const long *pidx")
    if spec.mu:
        params += [f"__global const {l_t} *pmu", "const long mu_off"]
    if spec.q is not None:
        params.append(f"const {c_type(spec.q)} q")
    params += ["const long P", "const long chunk"]

    body = []
    if mode == "seq":
        body += ["    const long g = get_global_id(0);", "    if (g >= nout) return;"]
    else:
        body.append(f"    __local A lv[{GROUP}];")
        if arg:
            body.append(f"    __local long li[{GROUP}];")
        body += ["    const long grp = get_group_id(0);", "    const int l = get_local_id(0);",
                 "    const long g = grp / P, p = grp % P;"]
    body += ["    long r = g, c;"] + [f"    long {v}_b = {v}_off;" for v in names]
    for j in reversed(range(nk)):
        body.append(f"    c = r % kd{j}; r /= kd{j};")
        body += [f"    {v}_b += c * {v}_k{j};" for v in names]
    if spec.mu:
        body.append(f"    const {l_t} mu = pmu[mu_off + g];")
    body += [f"    A av = {_literal(_identity(spec.op, spec.acc), a_t)};",
             "    long ai = LONG_MAX;"]
    if mode == "seq":
        body.append("    for (long k = 0; k < m; k++) {")
    else:
        body += ["    const long k1 = min(p * chunk + chunk, m);",
                 f"    for (long k = p * chunk + l; k < k1; k += {GROUP}) {{"]
    body += ["        long rr = k;"] + [f"        long {v}_i = {v}_b;" for v in names]
    for j in reversed(range(nr)):
        if j:
            body.append(f"        c = rr % rd{j}; rr /= rd{j};")
            body += [f"        {v}_i += c * {v}_r{j};" for v in names]
        else:
            body += [f"        {v}_i += rr * {v}_r0;" for v in names]
    defs: dict[str, str] = {}
    for v, dt, prog in zip(inputs, ins, progs):
        value = f"p{v}[{v}_i]"
        if prog is not None:  # the program's value, from its leaves (see .fusion)
            leaves = [(f"{v}{j}l", c_type(w.x._a.dtype)) for j, w in enumerate(prog.leaves)]
            body += [f"        const {ct} {n} = p{n[:-1]}[{n[:-1]}_i];" for n, ct in leaves]
            scalars = [(f"{v}s{j}", c_type(sv.dtype)) for j, sv in enumerate(prog.scalars)]
            more, lines, value = fusion.statements(prog.instructions, leaves, scalars,
                                                   f"{v}v", fp64)
            defs.update(more)
            body += ["    " + line for line in lines]
        load = _convert(value, c_type(dt), l_t, spec.load.kind == "b" and dt.kind != "b")
        body.append(f"        const {l_t} {v} = {load};")
    body += [f"        const A bv = (A)({spec.map});",
             f"        const long bi = {'pidx[a_i]' if idx_in else 'k'};",
             "        COMBINE(av, ai, bv, bi);", "    }"]
    if mode != "seq":
        # a tree in local memory (the index travels only for the arg-extrema)
        put = "lv[l] = av; li[l] = ai;" if arg else "lv[l] = av;"
        get = "const long bi = li[l + s];" if arg else "const long bi = 0;"
        body += [f"    {put}", "    barrier(CLK_LOCAL_MEM_FENCE);",
                 f"    for (int s = {GROUP // 2}; s > 0; s >>= 1) {{",
                 "        if (l < s) {",
                 f"            const A bv = lv[l + s]; {get}",
                 "            COMBINE(av, ai, bv, bi);", f"            {put}",
                 "        }", "        barrier(CLK_LOCAL_MEM_FENCE);", "    }",
                 "    if (l != 0) return;"]
    if final:
        e = "ai" if arg else spec.epilogue.replace("acc", "av")
        body.append(f"    out[o_off + g] = ({o_t})({e});")
    else:
        slot = "g" if mode == "seq" else "grp"
        body.append(f"    out[o_off + {slot}] = av;")
        if arg:
            body.append(f"    oidx[{slot}] = ai;")
    types = [c_type(d) for d in ins] + array_types + [l_t, o_t]
    head = ""
    if defs or any(p is not None for p in progs):
        head = fusion._head(defs, types)
    return (_prelude(spec.acc, types) + head + _combine(spec.op, spec.acc)
            + "__kernel void red(" + ", ".join(params) + ") {\n" + "\n".join(body) + "\n}\n")


# -- layouts and launches -------------------------------------------------------------------

def _temporary(t: HostPtrArray, dev: Device, mode: str) -> ArrayArg:
    """A pooled array's kernel argument (always one: whole elements, a buffer on ``dev``)."""
    v = array_arg(t, dev, mode)
    assert v is not None
    return v


class Operand:
    """An input of a reduction: its kernel argument, its element strides over the kept
    axes (the result's order) and over the reduced axes.  A pending result's operand is
    its program (``prog``, :mod:`.fusion`) folded into the first pass: ``parts`` are its
    leaves' operands, ``arg`` is ``None``."""

    __slots__ = ("arg", "dtype", "kept", "red", "prog", "parts")

    def __init__(self, arg: ArrayArg | None, dtype: np.dtype, kept: tuple[int, ...],
                 red: tuple[int, ...], prog: Any = None, parts: Sequence[Operand] = ()
                 ) -> None:
        self.arg, self.dtype, self.kept, self.red = arg, dtype, kept, red
        self.prog, self.parts = prog, parts

    def arrays(self) -> Sequence[Operand]:
        """The operands passed as arrays: this one, or its program's leaves."""
        return self.parts if self.prog is not None else (self,)

    def signature(self) -> Any:
        return self.dtype if self.prog is None else (self.dtype, self.prog.signature())


def _fused(x: HostPtrArray, axes: tuple[int, ...]) -> tuple[Any, Operand] | None:
    """``(token, operand)`` folding ``x``'s pending program into a reduction over ``axes``,
    or ``None`` (``x`` is no whole pending result)."""
    got = fusion.pending_program(x)
    if got is None:
        return None
    token, prog = got
    parts = []
    nd = len(prog.shape)
    for v in prog.leaves:
        st = fusion._broadcast(v, prog.shape)
        parts.append(Operand(v, v.x._a.dtype, tuple(st[k] for k in range(nd) if k not in axes),
                             tuple(st[k] for k in axes)))
    return token, Operand(None, prog.dtype, (), (), prog, parts)


def _launch(dev: Device, spec: Spec, ops: list[Operand], kept: tuple[int, ...],
            red: tuple[int, ...], out: HostPtrArray, mu: HostPtrArray | None,
            q: Any, idx: HostPtrArray | None = None) -> bool:
    """Reduce ``ops`` (``kept``/``red`` extents) into the contiguous ``out``; ``False``
    (nothing launched) where an operand can't be a kernel argument."""
    arrays = [a for o in ops for a in o.arrays()]
    kd, ksts = _layout(kept, [a.kept for a in arrays])
    rd, rsts = _layout(red, [a.red for a in arrays])
    n, m = math.prod(kd), math.prod(rd)
    o = array_arg(out, dev, "w")
    mu_arg = array_arg(mu, dev, "r") if mu is not None else None
    if o is None or (mu is not None and mu_arg is None):
        return False
    if m <= _SEQ_MAX or n >= _SEQ_RESULTS:
        _enqueue(dev, spec, ops, kd, ksts, rd, rsts, "seq", 1, m, out, o, mu_arg, q, idx,
                 None, True)
        return True
    parts = max(1, min(-(-_GROUPS // n), -(-m // (4 * GROUP))))
    if parts == 1:
        _enqueue(dev, spec, ops, kd, ksts, rd, rsts, "group", 1, m, out, o, mu_arg, q, idx,
                 None, True)
        return True
    chunk = -(-m // parts)
    parts = -(-m // chunk)
    tv = pool.result(dev, (n * parts,), spec.acc)
    arg = spec.op in ("argmax", "argmin")
    ti = pool.result(dev, (n * parts,), np.dtype(np.int64)) if arg else None
    _enqueue(dev, spec, ops, kd, ksts, rd, rsts, "group", parts, chunk, tv, None, mu_arg, q,
             idx, ti, False)
    # pass 2: the partials, (n, parts) contiguous, one group per result
    spec2 = Spec(spec.op, spec.acc, spec.acc, spec.out, "a", spec.epilogue, False, spec.q)
    tva = _temporary(tv, dev, "r")
    p2 = [Operand(tva, spec.acc, (parts,), (1,))]
    kd2, ksts2 = _layout((n,), [p2[0].kept])
    rd2, rsts2 = _layout((parts,), [p2[0].red])
    _enqueue(dev, spec2, p2, kd2, ksts2, rd2, rsts2, "group", 1, parts, out, o, None, q, ti,
             None, True)
    return True


_SOURCES: dict[tuple[Any, ...], str] = {}
_F64 = np.dtype(np.float64)


def _enqueue(dev: Device, spec: Spec, ops: list[Operand], kd: tuple[int, ...],
             ksts: Sequence[tuple[int, ...]], rd: tuple[int, ...],
             rsts: Sequence[tuple[int, ...]],
             mode: str, parts: int, chunk: int, out: HostPtrArray, o: ArrayArg | None,
             mu: ArrayArg | None, q: Any, idx_in: HostPtrArray | None,
             idx_out: HostPtrArray | None, final: bool) -> None:
    """One launch of the reduction kernel (``o``: ``out``'s argument if made already;
    ``final``: ``out`` is the result, else the partial states of pass 1).  ``out``, the
    index temporaries and ``mu`` are pooled storages taken by this reduction, which no
    other thread can reach yet (see :func:`~hostarray._compute.launch.enqueue`'s ``new``)."""
    key = (spec.op, spec.acc, spec.load, spec.out, spec.map, spec.epilogue, spec.mu, spec.q,
           *[op.signature() for op in ops], len(kd), len(rd), mode, final, idx_in is not None,
           supports(dev, _F64))
    src = _SOURCES.get(key)
    if src is None:
        if len(_SOURCES) >= 4096:
            _SOURCES.clear()
        src = _SOURCES[key] = _source(spec, [op.dtype for op in ops], len(kd), len(rd), mode,
                                      final, idx_in is not None, [op.prog for op in ops],
                                      supports(dev, _F64))
    kernel = compiled(dev, src, "red")
    n, m = math.prod(kd), math.prod(rd)
    if o is None:
        o = _temporary(out, dev, "w")
    # plain ints: the kernel's scalars are declared (launch.compiled), pyopencl packs them
    call: list[Any] = [n, m, o, o.offset]
    if idx_out is not None:
        call.append(_temporary(idx_out, dev, "w"))
    j = 0
    for op in ops:
        for a in op.arrays():
            arg = a.arg
            assert arg is not None
            call += [arg, arg.offset, *ksts[j], *rsts[j]]
            j += 1
        if op.prog is not None:
            call += [int(v) if type(v) is np.bool_ else v for v in op.prog.scalars]
    call += [*kd, *rd]
    if idx_in is not None:
        call.append(_temporary(idx_in, dev, "r"))
    if mu is not None:
        call += [mu, mu.offset]
    if spec.q is not None:
        call.append(spec.q.type(q))
    call += [parts, chunk]
    items = n if mode == "seq" else n * parts * GROUP
    new = [out._s] + [t._s for t in (idx_in, idx_out) if t is not None]
    if mu is not None:
        new.append(mu.s)
    enqueue(dev, kernel, "reduce_" + spec.op, items, call, new=new)


# -- the namespace's reductions -------------------------------------------------------------

def _probe(fn: Any, *dts_nd: tuple[np.dtype, int]) -> np.dtype | None:
    """The result type of ``fn`` on one-element arrays of these types and dimensions
    (``None`` where numpy refuses: the host path raises its error)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fn(*(np.zeros((1,) * nd, dt) for dt, nd in dts_nd))
    except Exception:
        return None
    return np.asarray(r).dtype


def _axes(axis: Any, nd: int) -> tuple[int, ...] | None:
    if axis is None:
        return tuple(range(nd))
    try:
        return tuple(np.lib.array_utils.normalize_axis_tuple(axis, nd))
    except Exception:
        return None


def _split(x: HostPtrArray, arg: ArrayArg, axes: tuple[int, ...]) -> Operand:
    sh = x._a.shape
    kept = tuple(arg.strides[k] for k in range(len(sh)) if k not in axes)
    red = tuple(arg.strides[k] for k in axes)
    return Operand(arg, x._a.dtype, kept, red)


def _result_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool
                  ) -> tuple[int, ...]:
    return tuple(1 if k in axes else n for k, n in enumerate(shape)
                 if keepdims or k not in axes)


_SIMPLE = {"sum": "add", "prod": "mul", "max": "max", "min": "min", "any": "or", "all": "and",
           "argmax": "argmax", "argmin": "argmin"}


_SPECS: dict[tuple[Any, ...], tuple[Spec, Any] | None] = {}


def _types(v: Any) -> Any:
    return tuple(type(e) for e in v) if type(v) is tuple else type(v)


def _spec(name: str, x: HostPtrArray, axis: Any, dtype: Any, keepdims: bool,
          correction: Any) -> tuple[Spec, Any] | None:
    """The kernel description of reduction ``name`` of ``x`` and its scalar ``q`` (cached
    per types and arguments: numpy's answer on one-element arrays costs microseconds)."""
    try:
        # types too: True == 1 and np.True_ == 1, but numpy refuses a bool axis
        key = (name, x._a.dtype, x._a.ndim, axis, _types(axis), dtype, keepdims,
               type(keepdims), correction, type(correction))
        return _SPECS[key]
    except KeyError:
        r = _SPECS[key] = _new_spec(name, x, axis, dtype, keepdims, correction)
        return r
    except TypeError:  # an unhashable argument (a list of axes): not cached
        return _new_spec(name, x, axis, dtype, keepdims, correction)


def _new_spec(name: str, x: HostPtrArray, axis: Any, dtype: Any, keepdims: bool,
              correction: Any) -> tuple[Spec, Any] | None:
    dt, nd = x._a.dtype, x._a.ndim
    if name in ("sum", "prod"):
        rt = _probe(lambda a: getattr(a, name)(axis=axis, dtype=dtype, keepdims=keepdims),
                    (dt, nd))
        if rt is None or (dt.kind == "f" and rt.kind != "f"):
            return None  # floats converted to integers: numpy's casts, on the host
        return Spec(_SIMPLE[name], rt, rt, rt), None
    if name in ("max", "min"):
        if _probe(lambda a: getattr(a, name)(axis=axis, keepdims=keepdims), (dt, nd)) is None:
            return None
        return Spec(name, dt, dt, dt), None
    if name in ("any", "all"):
        if _probe(lambda a: getattr(a, name)(axis=axis, keepdims=keepdims), (dt, nd)) is None:
            return None
        b = np.dtype(bool)
        return Spec(_SIMPLE[name], b, b, b), None
    if name in ("argmax", "argmin"):
        rt = _probe(lambda a: getattr(a, name)(axis=axis, keepdims=keepdims), (dt, nd))
        if rt is None:
            return None
        return Spec(name, dt, dt, rt), None
    rt = _probe(lambda a: a.mean(axis=axis, keepdims=keepdims), (dt, nd))
    if rt is None or rt.kind != "f":
        return None
    if name == "mean":
        return Spec("add", rt, rt, rt, "a", "acc / q", q=rt), None
    # var, std: the sum of squared deviations from the mean (numpy's two passes)
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        return None
    epi = "sqrt(acc / q)" if name == "std" else "acc / q"
    return Spec("add", rt, rt, rt, "(a - mu) * (a - mu)", epi, mu=True, q=rt), correction


def _reduce(name: str, dev: Device, x: HostPtrArray, axis: Any = None, dtype: Any = None,
            keepdims: bool = False, correction: Any = 0) -> HostPtrArray | None:
    a = x._a
    if a.size == 0 or not supports(dev, a.dtype):
        return None
    if name in ("argmax", "argmin") and axis is not None and type(axis) is not int:
        return None
    got = _spec(name, x, axis, dtype, keepdims, correction)
    axes = _axes(axis, a.ndim)
    if got is None or axes is None:
        return None
    spec, corr = got
    if not all(supports(dev, d) for d in (spec.acc, spec.load, spec.out)):
        return None
    return _folded(dev, x, axes, lambda op: _reduce_op(dev, spec, corr, op, a, axes, keepdims))


def _folded(dev: Device, x: HostPtrArray, axes: tuple[int, ...],
            body: Callable[[Operand], HostPtrArray | None]) -> HostPtrArray | None:
    """``body(operand of x)``: ``x``'s pending program folded in where it has one (under
    its leaves' locks, while it is still pending: no write reached them since), else
    ``x`` as an array."""
    got = _fused(x, axes)
    if got is not None:
        token, op = got
        storages = list({id(p.arg.s): p.arg.s for p in op.parts if p.arg is not None}.values())
        with locked(storages):
            if token.state == PENDING:
                return body(op)
    xa = array_arg(x, dev, "r")
    if xa is None:
        return None
    return body(_split(x, xa, axes))


def _reduce_op(dev: Device, spec: Spec, corr: Any, op: Operand, a: np.ndarray,
               axes: tuple[int, ...], keepdims: bool) -> HostPtrArray | None:
    m = math.prod(a.shape[k] for k in axes)
    kept = tuple(n for k, n in enumerate(a.shape) if k not in axes)
    red = tuple(a.shape[k] for k in axes)
    out = pool.result(dev, _result_shape(a.shape, axes, keepdims), spec.out)
    if not spec.mu:
        q = m if spec.q is not None else None
        return out if _launch(dev, spec, [op], kept, red, out, None, q) else None
    den = m - corr
    if den <= 0:
        return None  # numpy's warning and inf/nan: the host path
    mu = pool.result(dev, (math.prod(kept),), spec.out)
    mean = Spec("add", spec.acc, spec.load, spec.out, "a", "acc / q", q=spec.q)
    if not _launch(dev, mean, [op], kept, red, mu, None, m):
        return None
    _launch(dev, spec, [op], kept, red, out, mu, den)
    return out


def _vecdot(dev: Device, x1: Any, x2: Any, axis: Any) -> HostPtrArray | None:
    if type(x1) is not HPA or type(x2) is not HPA or type(axis) is not int:
        return None
    a1, a2 = x1._a, x2._a
    if a1.size == 0 or a2.size == 0 or a1.ndim == 0 or a2.ndim == 0:
        return None
    rt = _probe(lambda p, r: np.vecdot(p, r, axis=axis),  # type: ignore[call-overload]
                (a1.dtype, a1.ndim),
                (a2.dtype, a2.ndim))
    if rt is None or not all(supports(dev, d) for d in (rt, a1.dtype, a2.dtype)):
        return None
    if not (-a1.ndim <= axis < a1.ndim and -a2.ndim <= axis < a2.ndim):
        return None
    k1, k2 = axis % a1.ndim, axis % a2.ndim
    m = a1.shape[k1]
    if a2.shape[k2] != m:
        return None
    outer1 = a1.shape[:k1] + a1.shape[k1 + 1:]
    outer2 = a2.shape[:k2] + a2.shape[k2 + 1:]
    try:
        shape = np.broadcast_shapes(outer1, outer2)
    except ValueError:
        return None
    if rt.kind == "b":
        mp = "a & b"
    elif rt.kind == "f":
        mp = "a * b"
    else:
        mp = "(A)((WA)(UA)a * (WA)(UA)b)"
    spec = Spec("add", rt, rt, rt, mp)

    def operand(strides: tuple[int, ...], k: int, outer: tuple[int, ...]
                ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        st = strides[:k] + strides[k + 1:]
        pad = len(shape) - len(st)
        return (0,) * pad + tuple(0 if n == 1 else s for n, s in zip(outer, st)), (strides[k],)

    # pending operands fold their programs in (under their leaves' locks, while pending)
    tokens, ops, leaves = [], [], []
    for x, k, outer in ((x1, k1, outer1), (x2, k2, outer2)):
        got = fusion.pending_program(x)
        if got is None or x1 is x2:
            xa = array_arg(x, dev, "r")
            if xa is None:
                return None
            ops.append(Operand(xa, x._a.dtype, *operand(xa.strides, k, outer)))
            continue
        token, prog = got
        parts = [Operand(v, v.x._a.dtype, *operand(fusion._broadcast(v, prog.shape), k, outer))
                 for v in prog.leaves]
        tokens.append(token)
        leaves += [v.s for v in prog.leaves]
        ops.append(Operand(None, prog.dtype, (), (), prog, parts))
    with locked(leaves):
        if all(t.state == PENDING for t in tokens):
            out = pool.result(dev, shape, rt)
            return out if _launch(dev, spec, ops, shape, (m,), out, None, None) else None
    ops = []
    for x, k, outer in ((x1, k1, outer1), (x2, k2, outer2)):
        xa = array_arg(x, dev, "r")
        if xa is None:
            return None
        ops.append(Operand(xa, x._a.dtype, *operand(xa.strides, k, outer)))
    out = pool.result(dev, shape, rt)
    return out if _launch(dev, spec, ops, shape, (m,), out, None, None) else None


def _norm(dev: Device, x: HostPtrArray, axis: Any, keepdims: bool, ord_: Any
          ) -> HostPtrArray | None:
    a = x._a
    if isinstance(ord_, bool) or not isinstance(ord_, (int, float)) or math.isnan(ord_):
        return None
    if a.size == 0 or not supports(dev, a.dtype):
        return None
    rt = a.dtype if a.dtype.kind == "f" else np.dtype(np.float64)  # linalg's _float
    axes = _axes(axis, a.ndim)
    if axes is None or not supports(dev, rt):
        return None
    if ord_ == math.inf or ord_ == -math.inf:
        spec, q = Spec("max" if ord_ > 0 else "min", rt, rt, rt, "fabs(a)"), None
    elif ord_ == 0:
        spec, q = Spec("add", rt, rt, rt, "(a != 0)"), None
    elif ord_ == 1:
        spec, q = Spec("add", rt, rt, rt, "fabs(a)"), None
    elif ord_ == 2:
        spec, q = Spec("add", rt, rt, rt, "a * a", "sqrt(acc)"), None
    else:
        spec = Spec("add", rt, rt, rt, f"pow(fabs(a), (A){float(ord_)!r})", "pow(acc, q)",
                    q=rt)
        q = 1.0 / ord_
    kept = tuple(n for k, n in enumerate(a.shape) if k not in axes)
    red = tuple(a.shape[k] for k in axes)

    def body(op: Operand) -> HostPtrArray | None:
        out = pool.result(dev, _result_shape(a.shape, axes, keepdims), rt)
        return out if _launch(dev, spec, [op], kept, red, out, None, q) else None

    return _folded(dev, x, axes, body)


def reduction(name: str, dev: Device, operands: tuple[Any, ...], **kw: Any
              ) -> HostPtrArray | None:
    """The namespace's reduction ``name`` (``sum``, ``prod``, ``max``, ``min``, ``mean``,
    ``var``, ``std``, ``any``, ``all``, ``argmax``, ``argmin``, ``vecdot``,
    ``vector_norm``) of ``operands`` on ``dev`` with the function's keyword arguments,
    or ``None``: the host path must compute it (counted as a host fallback)."""
    if name == "vecdot":
        r = _vecdot(dev, operands[0], operands[1], kw.get("axis", -1))
    elif name == "vector_norm":
        r = _norm(dev, operands[0], kw.get("axis"), kw.get("keepdims", False),
                  kw.get("ord", 2))
    else:
        r = _reduce(name, dev, operands[0], **kw)
    COUNTERS.add(**({"host_fallbacks": 1} if r is None else {"device_ops": 1}))
    return r


# -- cumulative sums and products -----------------------------------------------------------

def _scan_source(op: str, acc: np.dtype, src: np.dtype, nk: int, initial: bool) -> str:
    a_t, s_t = c_type(acc), c_type(src)
    params = ["const long nrows", "const long m", "__global A *out", "const long o_off",
              "const long o_sa", "__global const " + s_t + " *pa", "const long a_off",
              "const long a_sa"]
    params += [f"const long o_k{j}" for j in range(nk)] + [f"const long a_k{j}" for j in range(nk)]
    params += [f"const long kd{j}" for j in range(nk)]
    body = ["    const long g = get_global_id(0);", "    if (g >= nrows) return;",
            "    long r = g, c, o_i = o_off, a_i = a_off;"]
    for j in reversed(range(nk)):
        body += [f"    c = r % kd{j}; r /= kd{j};", f"    o_i += c * o_k{j}; a_i += c * a_k{j};"]
    body.append(f"    A av = {_literal(_identity(op, acc), a_t)};")
    if initial:
        body.append("    out[o_i] = av; o_i += o_sa;")
    load = _convert("pa[a_i + k * a_sa]", s_t, a_t, acc.kind == "b" and src.kind != "b")
    body += ["    for (long k = 0; k < m; k++) {", f"        const A bv = {load};",
             # numpy starts from the first element (a sum of -0.0 stays -0.0)
             "        if (k == 0) av = bv; else { COMBINE(av, 0, bv, 0); }",
             "        out[o_i + k * o_sa] = av;", "    }"]
    return (_prelude(acc, [s_t]) + _combine(op, acc) + "__kernel void scan("
            + ", ".join(params) + ") {\n" + "\n".join(body) + "\n}\n")


def _cumulative(name: str, dev: Device, x: HostPtrArray, axis: Any, dtype: Any,
                include_initial: bool) -> HostPtrArray | None:
    a = x._a
    if a.size == 0 or a.ndim == 0 or not supports(dev, a.dtype):
        return None
    if axis is None:
        if a.ndim != 1:
            return None
        axis = 0
    if type(axis) is not int or not -a.ndim <= axis < a.ndim:
        return None
    fn = np.cumulative_sum if name == "cumulative_sum" else np.cumulative_prod
    rt = _probe(lambda p: fn(p, axis=axis, dtype=dtype, include_initial=bool(include_initial)),
                (a.dtype, a.ndim))
    if rt is None or not supports(dev, rt) or (a.dtype.kind == "f" and rt.kind != "f"):
        return None
    ax = axis % a.ndim
    xa = array_arg(x, dev, "r")
    if xa is None:
        return None
    m = a.shape[ax]
    shape = a.shape[:ax] + (m + bool(include_initial),) + a.shape[ax + 1:]
    out = pool.result(dev, shape, rt)
    o = array_arg(out, dev, "w")
    if o is None:
        return None
    kept = a.shape[:ax] + a.shape[ax + 1:]
    kd, (oks, aks) = _layout(kept, [o.strides[:ax] + o.strides[ax + 1:],
                                    xa.strides[:ax] + xa.strides[ax + 1:]])
    op = "add" if name == "cumulative_sum" else "mul"
    src = _scan_source(op, rt, a.dtype, len(kd), bool(include_initial))
    kernel = compiled(dev, src, "scan")
    n = math.prod(kd)
    call: list[Any] = [n, m, o, o.offset, o.strides[ax], xa, xa.offset, xa.strides[ax],
                       *oks, *aks, *kd]
    enqueue(dev, kernel, name, n, call)
    return out


def cumulative(name: str, dev: Device, x: HostPtrArray, axis: Any, dtype: Any,
               include_initial: bool) -> HostPtrArray | None:
    """``cumulative_sum`` or ``cumulative_prod`` of ``x`` on ``dev`` (one work-item per
    row, sequential along ``axis``), or ``None``: the host path computes it (counted as
    a host fallback)."""
    r = _cumulative(name, dev, x, axis, dtype, include_initial)
    COUNTERS.add(**({"host_fallbacks": 1} if r is None else {"device_ops": 1}))
    return r


# what the device path computes, for hostarray._compute.device_functions() (the docs' tables)
_REDUCED_ON_HOST = "float16, complex, empty on host"
register(["sum", "prod"], _REDUCED_ON_HOST + "; a float dtype= to integers on host")
register(["min", "max", "mean", "any", "all", "argmin", "argmax", "vecdot", "linalg.vecdot",
          "cumulative_sum", "cumulative_prod"], _REDUCED_ON_HOST)
register(["var", "std"], _REDUCED_ON_HOST + "; no degree of freedom left on host")
register(["linalg.vector_norm"], _REDUCED_ON_HOST)
