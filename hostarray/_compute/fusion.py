"""Lazy fusion: element-wise results of the device path are pending expressions.

An element-wise operation on the device path (a function, an operator, ``astype``,
``where``, ``clip``; broadcasting and Python scalars included) decides its data type,
shape and every error at call time, takes its result's storage, and returns it at once:
the result's newest bytes are "on the device", written by a *deferred launch*
(:class:`hostarray._launch.Deferred`) that is recorded in the coherence state of its
inputs and result like any launch but not enqueued yet.  An operation on a pending
result inlines its expression instead of reading its bytes, so a chain
``((x * x + 1) * 0.5 - x) / 3`` is one :class:`Program` over ``x``, compiled into one
kernel (cached per program, data types, layout and device) and run when its value is
needed.  A reduction over a pending result folds its program into its first pass
(:mod:`hostarray._compute.reductions`); a pending result nobody can reach any more is
never computed.

*When* it runs is the coherence layer's rule: every access that must come after a
launch that writes or reads those bytes (a host read or write, a raw view, DLPack,
pickling, a kernel argument, ``cl_buffer``, ``free_buffer``, another device's write)
enqueues it first (see ``_launch``, "deferred launches").  A program grows to at most
:data:`MAX_INSTRUCTIONS` operations over :data:`MAX_LEAVES` arrays and
:data:`MAX_SCALARS` scalars; an operand that would make it larger is run first and read
as an array.

A program is data: ``instructions`` (each ``(C expression, loop type, result type,
convert, operand references)``), the ``leaves`` it reads (:class:`ArrayArg`) and its
``scalars`` (numpy scalars of their instruction's loop type).  A reference ``r`` is a
leaf for ``0 <= r < _SCALAR``, scalar ``r - _SCALAR`` below ``_VALUE``, else the value of
instruction ``r - _VALUE``.  The kernel's source depends on the instructions and the
types only (:func:`statements`), so ``x * 2`` and ``y * 3`` share one.
"""

from __future__ import annotations

import math
import re
import weakref
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from .. import _launch
from .._array import HostPtrArray
from .._devices import Device
from .._launch import _LIMITS, PENDING, ArrayArg, Deferred
from .._stats import COUNTERS
from .._storage import locked
from . import pool
from .kernel_text import _FLOAT64, _UNSIGNED, HELPERS, _conv, _exact_macros, _layout
from .launch import GROUP, c_type, compiled, supports, usable
from .pool import PooledStorage

__all__ = ["MAX_INSTRUCTIONS", "MAX_LEAVES", "MAX_SCALARS", "Program", "evaluate", "in_place",
           "node",
           "pending_program", "statements"]

HPA = HostPtrArray
MAX_INSTRUCTIONS = 32
MAX_LEAVES = 8
MAX_SCALARS = 16
#: whether element-wise results are pending expressions (``False``: one launch per operation,
#: as before; for comparisons in benchmarks and tests)
ENABLED = [True]
_SCALAR = 1 << 10
_VALUE = 1 << 20

Instruction = tuple[str, np.dtype, np.dtype, bool, tuple[int, ...]]


class Program:
    """What a pending result computes (see the module); immutable."""

    __slots__ = ("instructions", "leaves", "scalars", "shape", "dtype")

    def __init__(self, instructions: tuple[Instruction, ...], leaves: tuple[ArrayArg, ...],
                 scalars: tuple[Any, ...], shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.instructions, self.leaves, self.scalars = instructions, leaves, scalars
        self.shape, self.dtype = shape, dtype

    def signature(self) -> tuple[Any, ...]:
        """What the kernel's source depends on (the instructions and the types)."""
        return (self.instructions, tuple(v.x._a.dtype for v in self.leaves),
                tuple(s.dtype for s in self.scalars))


# -- finding pending results ---------------------------------------------------------------

def _producer(x: HostPtrArray) -> Deferred | None:
    """The pending launch writing ``x``'s storage, if any (a view of part of it: that
    launch runs now, and ``x`` is read as an array)."""
    s = x._s
    coh = s.coh
    if coh is None or not coh.deferred:
        return None
    for t in coh.deferred:
        if t.state == PENDING and t.out() is s:
            prog = t.payload
            a = x._a
            if (a.shape == prog.shape and a.dtype == prog.dtype and x._bytes()[0] == 0
                    and a.flags.c_contiguous):
                return t
            t.flush()
            return None
    return None


def pending_program(x: Any) -> tuple[Deferred, Program] | None:
    """``(token, program)`` where ``x`` is a whole pending result (for a consumer that
    folds it in: it must check, under the leaves' locks, that ``token.state`` is still
    ``PENDING``), else ``None``."""
    if type(x) is not HPA:
        return None
    t = _producer(x)
    return None if t is None else (t, t.payload)


def evaluate(x: HostPtrArray) -> HostPtrArray:
    """Enqueue the pending expression of ``x`` (if any) now, and return ``x``.

    Examples
    --------
    >>> import hostarray as ha
    >>> from hostarray._compute.fusion import evaluate
    >>> evaluate(ha.asarray([1.0, 2.0])).shape
    (2,)
    """
    s = x._s
    coh = s.coh
    if coh is not None and coh.deferred:
        for t in tuple(coh.deferred):
            if t.out() is s:
                t.flush()
    return x


# -- building a node -----------------------------------------------------------------------

def _leaf(x: HostPtrArray, dev: Device) -> ArrayArg | None:
    a = x._a
    item = a.itemsize
    off, lo, hi = x._bytes()
    if off % item or any(st % item for st in a.strides) or not usable(x._s, dev):
        return None
    return ArrayArg(x, off // item, tuple(st // item for st in a.strides), lo, hi, "r")


def node(dev: Device, name: str, expr: str, operands: Sequence[Any], loop: np.dtype,
         out_dt: np.dtype, shape: tuple[int, ...], convert: bool = True
         ) -> HostPtrArray | None:
    """``expr(*operands)`` on ``dev`` as a pending result (see the module), or ``None``:
    an operand can't be a kernel operand (nothing happened)."""
    for _ in range(2):
        r = _node(dev, name, expr, operands, loop, out_dt, shape, convert)
        if r is not _RETRY:
            return r
    return None


_RETRY: Any = object()


def _compose(dev: Device, name: str, expr: str, operands: Sequence[Any], loop: np.dtype,
             out_dt: np.dtype, shape: tuple[int, ...], convert: bool
             ) -> tuple[Program, list[Deferred]] | None:
    """The program of ``expr(*operands)`` (the pending operands' programs inlined) and the
    tokens inlined, or ``None`` (an operand can't be a kernel operand, or scalars alone)."""
    instructions: list[Instruction] = []
    leaves: list[ArrayArg] = []
    scalars: list[Any] = []
    refs: list[int | None] = [None] * len(operands)
    inlined: list[Deferred] = []
    # pending operands first: the first one's program is taken as it is (no renumbering)
    for k, x in enumerate(operands):
        if type(x) is not HPA:
            continue
        t = _producer(x)
        if t is None:
            continue
        if t in inlined:  # (the same pending operand twice: x * x)
            refs[k] = refs[next(j for j, o in enumerate(operands) if o is x)]
            continue
        p: Program = t.payload
        n_ins, n_leaves = len(instructions), len(leaves)
        if (n_ins + len(p.instructions) >= MAX_INSTRUCTIONS
                or n_leaves + len(p.leaves) > MAX_LEAVES
                or len(scalars) + len(p.scalars) > MAX_SCALARS):
            t.flush()  # too large: run it, and read its result
            continue
        if not inlined:
            instructions = list(p.instructions)
            leaves.extend(p.leaves)
            scalars.extend(p.scalars)
        else:
            where = []
            for v in p.leaves:
                for j, w in enumerate(leaves):
                    if w.x is v.x:
                        where.append(j)
                        break
                else:
                    where.append(len(leaves))
                    leaves.append(v)
            s0 = len(scalars)
            scalars.extend(p.scalars)
            for e, lt, ot, cv, rs in p.instructions:
                instructions.append((e, lt, ot, cv, tuple(
                    where[r] if r < _SCALAR else r + s0 if r < _VALUE else r + n_ins
                    for r in rs)))
        inlined.append(t)
        refs[k] = _VALUE + len(instructions) - 1
    for k, x in enumerate(operands):
        if refs[k] is not None:
            continue
        if type(x) is HPA:
            for j, w in enumerate(leaves):
                if w.x is x:
                    refs[k] = j
                    break
            else:
                if len(leaves) >= MAX_LEAVES:
                    return None
                leaf = _leaf(x, dev)
                if leaf is None:
                    return None
                refs[k] = len(leaves)
                leaves.append(leaf)
        else:
            if len(scalars) >= MAX_SCALARS:
                return None
            refs[k] = _SCALAR + len(scalars)
            scalars.append(x)
    if not leaves:
        return None  # scalars alone (a fill): the eager path
    instructions.append((expr, loop, out_dt, convert, tuple(r for r in refs if r is not None)))
    n = math.prod(shape)
    # the global size's limits, as for an eager launch: refused now, not at the flush
    lim = _LIMITS.get(dev) or _launch.launch_limits(dev)
    gs = -(-n // GROUP) * GROUP
    if gs > lim.max_size or gs // GROUP > lim.max_groups:
        lim.check_groups(name, dev, n, GROUP)  # (raises)
    return Program(tuple(instructions), tuple(leaves), tuple(scalars), shape, out_dt), inlined


def _node(dev: Device, name: str, expr: str, operands: Sequence[Any], loop: np.dtype,
          out_dt: np.dtype, shape: tuple[int, ...], convert: bool) -> Any:
    got = _compose(dev, name, expr, operands, loop, out_dt, shape, convert)
    if got is None:
        return None
    prog, inlined = got
    leaves = prog.leaves
    out = pool.result(dev, shape, out_dt)
    s = out._s
    storages = list({id(v.s): v.s for v in leaves}.values())
    keep = [t for t in storages if type(t) is not PooledStorage]
    token = Deferred(name, dev, storages, s, keep)
    token.payload = prog
    token.make = _maker(dev, prog, s.buffers[dev].buf, math.prod(shape))
    # under the leaves' locks: what the inlined programs read is still what they saw
    check = (lambda: all(t.state == PENDING for t in inlined)) if inlined else None
    if not _launch.defer(dev, token, leaves, s, out._a.nbytes, check):
        token.state = _launch.CANCELLED
        return _RETRY
    COUNTERS.add(device_ops=1)
    if _in_raw_block(storages):
        token.flush()
    return out


def _in_raw_block(storages: Sequence[Any]) -> bool:
    """Whether an input's bytes are in an open ``cl_buffer`` block: the user's raw commands
    that follow in the block are queued after this operation (as an eager launch was), so
    it is enqueued now, not deferred past them."""
    for st in storages:
        coh = st.coh
        if coh is not None and coh.raw_blocks:
            return True
    return False


def in_place(dev: Device, name: str, expr: str, operands: Sequence[Any], loop: np.dtype,
             out: HostPtrArray, convert: bool = True) -> HostPtrArray | None:
    """``out[...] = expr(*operands)`` where ``out`` is a whole pending result: its pending
    launch computes the new value instead (``x = a * 2; x += 1`` is one kernel), or
    ``None`` (the eager path: it runs ``out``'s launch first)."""
    t = _producer(out)
    if t is None:
        return None
    s = out._s
    for x in operands:
        if type(x) is HPA and x is not out and x._s is s:
            return None  # other bytes of out's memory: numpy's copy rule, the eager path
    a = out._a
    got = _compose(dev, name, expr, operands, loop, a.dtype, a.shape, convert)
    if got is None:
        return None
    prog, inlined = got
    storages = list({id(v.s): v.s for v in prog.leaves}.values())
    with locked([*storages, s]):
        if not t._flushing.acquire(blocking=False):
            return None  # being enqueued by another thread
        try:
            if t.state != PENDING or any(u.state != PENDING for u in inlined):
                return None
            # the launch reads the new leaves too (a raw view's there may enqueue it now,
            # with its old program: then the eager path computes the in-place operation)
            _launch.defer(dev, t, prog.leaves, None, 0)
            if t.state != PENDING:
                return None
            t.payload = prog
            t.make = _maker(dev, prog, s.buffers[dev].buf, a.size)
            old = [ref() for ref in t.storages]
            t.storages = tuple(weakref.ref(u) for u in {id(u): u for u in
                                                         [*old, *storages] if u}.values())
            if t.keep is not None:
                t.keep = list({id(u): u for u in [*t.keep, *storages]
                               if type(u) is not PooledStorage}.values())
        finally:
            t._flushing.release()
    COUNTERS.add(device_ops=1)
    if _in_raw_block(storages):
        t.flush()
    return out


# -- the kernel ------------------------------------------------------------------------------

class _Plan:
    __slots__ = ("kernel", "contiguous", "dims", "strides", "buffers")

    def __init__(self, kernel: Any, contiguous: bool, dims: tuple[int, ...],
                 strides: Sequence[tuple[int, ...]], buffers: tuple[int, ...]) -> None:
        self.kernel, self.contiguous, self.dims = kernel, contiguous, dims
        self.strides, self.buffers = strides, buffers


_PLANS: dict[tuple[Any, ...], _Plan] = {}


def _broadcast(v: ArrayArg, shape: tuple[int, ...]) -> tuple[int, ...]:
    """``v``'s element strides over ``shape`` (broadcast: 0 along its missing and length-1
    axes)."""
    a = v.x._a
    pad = len(shape) - a.ndim
    return tuple(0 if k < pad or a.shape[k - pad] == 1 else v.strides[k - pad]
                 for k in range(len(shape)))


def _maker(dev: Device, prog: Program, out_buf: Any, n: int) -> Callable[[], Any]:
    def make() -> Any:
        shape = prog.shape
        leaves = prog.leaves
        key = (dev, prog.instructions, shape,
               *[(v.x._a.dtype, v.x._a.shape, v.strides) for v in leaves],
               *[s.dtype for s in prog.scalars])
        plan = _PLANS.get(key)
        if plan is None:
            if len(_PLANS) >= 4096:
                _PLANS.clear()
            plan = _PLANS[key] = _plan(dev, prog)
        call: list[Any] = [n, out_buf, 0]
        if not plan.contiguous:
            call += [*plan.strides[0], *plan.dims]
        for j, v in enumerate(leaves):
            # (a leaf's buffer outlives the pending launch: free_buffer waits for it first)
            call += [v.s.buffers[dev].buf, v.offset, *plan.strides[j + 1]]
        call += [int(s) if type(s) is np.bool_ else s for s in prog.scalars]
        return plan.kernel, (-(-n // GROUP) * GROUP,), (GROUP,), call, plan.buffers
    return make


def _plan(dev: Device, prog: Program) -> _Plan:

    shape = prog.shape
    out_strides = tuple(math.prod(shape[k + 1:]) for k in range(len(shape)))
    strides = [out_strides] + [_broadcast(v, shape) for v in prog.leaves]
    dims, sts = _layout(shape, strides)
    contiguous = len(dims) <= 1 and sts[0] in ((), (1,)) and \
        all(st in ((), (0,), (1,)) for st in sts[1:])
    if contiguous:
        sts = tuple((st[0] if st else 0,) for st in sts)
    nd = 1 if contiguous else len(dims)
    src = _source(prog, nd, contiguous, supports(dev, _FLOAT64))
    per_leaf = 2 + nd
    first = 3 if contiguous else 3 + 2 * nd
    buffers = (1,) + tuple(first + j * per_leaf for j in range(len(prog.leaves)))
    return _Plan(compiled(dev, src, "fused"), contiguous, dims, sts, buffers)


def _source(prog: Program, nd: int, contiguous: bool, fp64: bool) -> str:
    out_t = c_type(prog.dtype)
    params = ["const long n", f"__global {out_t} *out", "const long o_off"]
    if not contiguous:
        params += [f"const long o_s{k}" for k in range(nd)]
        params += [f"const long d{k}" for k in range(nd)]
    leaves = []
    for j, v in enumerate(prog.leaves):
        ct = c_type(v.x._a.dtype)
        leaves.append((f"l{j}", ct))
        params += [f"__global const {ct} *p{j}", f"const long p{j}_off"]
        params += [f"const long p{j}_s{k}" for k in range(nd)]
    scalars = []
    for j, sv in enumerate(prog.scalars):
        ct = c_type(sv.dtype)
        scalars.append((f"s{j}", ct))
        params.append(f"const {ct} s{j}")
    body = ["    const long i = (long)get_global_id(0);", "    if (i >= n) return;"]
    if contiguous:
        store = "out[o_off + i]"
        body += [f"    const {ct} l{j} = p{j}[p{j}_off + i * p{j}_s0];"
                 for j, (_, ct) in enumerate(leaves)]
    else:
        arrays = ["o"] + [f"p{j}" for j in range(len(leaves))]
        body.append("    long rest_ = i, ix_;")
        body += [f"    long {v}_i = {v}_off;" for v in arrays]
        for k in reversed(range(nd)):
            body.append(f"    ix_ = rest_ % d{k}; rest_ /= d{k};")
            body += [f"    {v}_i += ix_ * {v}_s{k};" for v in arrays]
        store = "out[o_i]"
        body += [f"    const {ct} l{j} = p{j}[p{j}_i];" for j, (_, ct) in enumerate(leaves)]
    defs, lines, last = statements(prog.instructions, leaves, scalars, "v", fp64)
    body += lines
    return (_head(defs, [out_t] + [ct for _, ct in leaves + scalars]) + "__kernel void fused("
            + ", ".join(params) + ") {\n" + "\n".join(body) + f"\n    {store} = {last};\n}}\n")


def _head(defs: dict[str, str], types: list[str]) -> str:
    """The program's first lines: the extension double needs, contraction off (numpy rounds
    every operation: ``a * b + c`` must not become one fused multiply-add), the helpers."""
    text = "\n".join(defs.values())
    fp64 = "double" in types or "double" in text
    return (("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if fp64 else "")
            + "#pragma OPENCL FP_CONTRACT OFF\n" + text + "\n")


_WORD = {k: re.compile(rf"\b{k}\b") for k in ("T", "U", "W", "BITS", "FDIV", "FSQRT")}
_OPERAND = re.compile(r"\b([abc])\b")
_BITS = {"char": 8, "uchar": 8, "short": 16, "ushort": 16, "int": 32, "uint": 32,
         "long": 64, "ulong": 64}


def _typed_text(text: str, loop_t: str) -> str:
    """``text`` with the loop type's names spelt out (see elementwise's ``_source``)."""

    u = _UNSIGNED[loop_t]
    w = ("ulong" if loop_t in ("long", "ulong") else "uint") if u != loop_t or \
        loop_t.startswith("u") else loop_t
    text = _WORD["BITS"].sub(str(_BITS.get(loop_t, 0)), text)
    text = _WORD["FDIV"].sub(f"FDIV_{loop_t}", text)
    text = _WORD["FSQRT"].sub(f"FSQRT_{loop_t}", text)
    text = _WORD["T"].sub(loop_t, text)
    text = _WORD["U"].sub(u, text)
    return _WORD["W"].sub(w, text)


def _operand_name(names: dict[str, str], match: re.Match[str]) -> str:
    return names[match.group(1)]


def statements(instructions: Sequence[Instruction], leaves: Sequence[tuple[str, str]],
               scalars: Sequence[tuple[str, str]], prefix: str, fp64: bool
               ) -> tuple[dict[str, str], list[str], str]:
    """OpenCL C computing a program's value from its loaded leaves and its scalars
    (``(C name, C type)`` each): ``(definitions, statements, the value's name)``.  Each
    instruction is the eager kernel's computation (:mod:`.elementwise`): its operands
    converted to its loop type as numpy converts them, the expression, the result
    converted to its result type, so a fused kernel gives the eager kernels' bits."""

    defs: dict[str, str] = {}
    lines: list[str] = []
    values: list[tuple[str, str]] = []
    for k, (expr, lt, ot, convert, refs) in enumerate(instructions):
        loop_t, out_t = c_type(lt), c_type(ot)
        names = {}
        for m, r in enumerate(refs):
            letter = "abc"[m]
            var = f"{prefix}{k}{letter}"
            names[letter] = var
            if _SCALAR <= r < _VALUE:  # a scalar: of the loop type already
                lines.append(f"    const {loop_t} {var} = {scalars[r - _SCALAR][0]};")
                continue
            src, st = leaves[r] if r < _SCALAR else values[r - _VALUE]
            if lt.kind == "b":
                lines.append(f"    const {loop_t} {var} = ({src} != 0);")
            elif convert:
                lines.append(f"    const {loop_t} {var} = {_conv(src, st, loop_t)};")
            else:
                lines.append(f"    const {st} {var} = {src};")
        e = expr
        for h, text in HELPERS.items():
            if h in e:
                typed = h.replace("_T", "_" + loop_t)
                defs.setdefault(typed, _typed_text(text.replace(h, typed), loop_t))
                e = e.replace(h, typed)
        e = _typed_text(e, loop_t)
        e = _OPERAND.sub(partial(_operand_name, names), e)
        value = f"({out_t})(({e}) != 0)" if ot.kind == "b" else _conv(f"({e})", loop_t, out_t)
        var = f"{prefix}{k}"
        lines.append(f"    const {out_t} {var} = {value};")
        values.append((var, out_t))
    text = "\n".join([*defs.values(), *lines])
    macros = {}  # before the helpers that use them
    for t in ("float", "double"):
        if f"FDIV_{t}" in text or f"FSQRT_{t}" in text:
            macros[f"#macros {t}"] = _exact_macros(t, fp64).replace(
                "FDIV(", f"FDIV_{t}(").replace("FSQRT(", f"FSQRT_{t}(")
    return {**macros, **defs}, lines, values[-1][0]
