"""The OpenCL C of the device path's matrix product: one register-blocked tiled kernel,
generated per tile configuration (:class:`Config`) and per operand layout (:class:`Layout`).

A work-group of ``LS = (TM / WM) x (TN / WN)`` work-items computes a ``TM x TN`` block of
``C``; each work-item a ``WM x WN`` block of outputs held in registers.  Per step along
``K`` the group stages a ``TM x TK`` tile of ``A`` and a ``TK x TN`` tile of ``B`` in local
memory, both stored ``k``-major (``As[k][m]``, ``Bs[k][n]``), so that a work-item reads its
``WM`` values of ``A`` and ``WN`` of ``B`` for one ``k`` as ``WM / 4`` and ``WN / 4``
vectors of 4 (``float4`` for float32): the rows of a work-item are 4 consecutive rows, then
the next 4 ``4 * TM / WM`` rows further (likewise its columns), so that neighbouring
work-items read neighbouring vectors (no bank conflict) and each value read from local
memory is used ``WN`` (``WM``) times from a register.

Global memory is read by neighbouring work-items at neighbouring addresses along whichever
axis of each operand is contiguous (its rows, or its columns for a transposed view), as
vectors of 4 where that axis has stride 1 and every offset is a multiple of 4 elements (then
the loads are 16-byte aligned: buffers are), else element by element.  With ``DB`` (double
buffering) the next tiles are read into registers while the current ones are used, into the
other half of local memory: one barrier per step.  A layout whose sizes are multiples of the
tiles (``full``) has no bounds checks; otherwise out-of-range elements load as zero and
out-of-range outputs are not stored, so edges need no other case.  Indices are 32-bit where
every index of the product fits (64-bit arithmetic costs several instructions on a GPU).

The data types are the caller's: loop type ``t`` (numpy kind ``kind``), the operands' stored
types, the result's.  Integer products and sums wrap (computed unsigned, as numpy's do in the
loop type); ``bool`` is the logical or of ands.  This module is pure: strings only.

Examples
--------
>>> cfg = Config(64, 64, 8, 4, 4, True)
>>> cfg.local_size, cfg.local_bytes(4)
(256, 8704)
>>> "#define LS 256" in source(cfg, Layout("float", "f", "float", "float", "float"))
True
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Config", "Layout", "PAD", "VERSION", "source"]

#: changes whenever the generated code changes (a tuning cache of an older one is not used)
VERSION = 2
#: elements of padding per local-memory row: a multiple of 4 (rows stay vector-aligned) that
#: spreads the stores of a tile read along ``k`` over the banks
PAD = 4


@dataclass(frozen=True)
class Config:
    """One tile configuration: a ``tm x tn`` block of ``C`` per work-group, ``tk`` along
    ``K`` per step, ``wm x wn`` outputs per work-item (multiples of 4), ``db``: double
    buffering.

    Examples
    --------
    >>> Config.parse("128x128x8/8x8/db") == Config(128, 128, 8, 8, 8, True)
    True
    """

    tm: int
    tn: int
    tk: int
    wm: int
    wn: int
    db: bool

    @property
    def local_size(self) -> int:
        """Work-items per group."""
        return (self.tm // self.wm) * (self.tn // self.wn)

    def local_bytes(self, itemsize: int) -> int:
        """Local memory its tiles take for elements of ``itemsize`` bytes."""
        return (2 if self.db else 1) * self.tk * (self.tm + self.tn + 2 * PAD) * itemsize

    def valid(self) -> bool:
        """Whether the generator takes it: whole vectors per work-item, whole tiles of
        loads per group."""
        ls = self.local_size
        return (self.wm % 4 == 0 and self.wn % 4 == 0 and self.tm % self.wm == 0
                and self.tn % self.wn == 0 and self.tk % 4 == 0 and ls >= 1
                and (self.tm * self.tk) % ls == 0 and (self.tn * self.tk) % ls == 0
                and self.tm % 4 == 0 and self.tn % 4 == 0)

    def key(self) -> str:
        """``TMxTNxTK/WMxWN/db`` (``/sb``: single buffer), as :meth:`parse` reads it."""
        return f"{self.tm}x{self.tn}x{self.tk}/{self.wm}x{self.wn}/{'db' if self.db else 'sb'}"

    @classmethod
    def parse(cls, text: str) -> Config:
        """The configuration :meth:`key` wrote (``ValueError`` if it is none)."""
        try:
            tiles, work, buf = text.split("/")
            tm, tn, tk = (int(v) for v in tiles.split("x"))
            wm, wn = (int(v) for v in work.split("x"))
        except ValueError:
            raise ValueError(f"not a matmul configuration: {text!r}") from None
        if buf not in ("db", "sb"):
            raise ValueError(f"not a matmul configuration: {text!r}")
        cfg = cls(tm, tn, tk, wm, wn, buf == "db")
        if not cfg.valid():
            raise ValueError(f"not a valid matmul configuration: {text!r}")
        return cfg


@dataclass(frozen=True)
class Layout:
    """What one product's source depends on besides its :class:`Config`: the loop type
    ``t`` and its numpy ``kind``, the stored types of ``A``, ``B`` and ``C``, the number of
    (merged) batch axes ``nbd``; ``ta``: ``A`` is read along ``m`` (stored by columns),
    ``tb``: ``B`` along ``k``; ``va``, ``vb``: the vector width (1 or 4) of their global
    loads, ``vc`` of the stores of ``C``; ``full``: the sizes are multiples of the tiles;
    ``idx``: the index type (``int`` or ``long``); ``fma``: floating sums use ``fma()``
    (where the device has a fused multiply-add in hardware: one instruction, and no
    compiler has to be trusted to contract ``a * b + c``)."""

    t: str
    kind: str
    a_t: str
    b_t: str
    out_t: str
    nbd: int = 0
    ta: bool = False
    tb: bool = False
    va: int = 1
    vb: int = 1
    vc: int = 1
    full: bool = False
    idx: str = "long"
    fma: bool = False


def _step(kind: str, t: str, fma: bool = False) -> tuple[str, str]:
    """(accumulator type, the new value of ``acc[i][j]`` from ``a``, ``b``) per kind."""
    if kind == "b":
        return "uchar", "acc[i][j] | (a & b)"
    if kind in "iu":
        wide = {"long": "ulong", "ulong": "ulong"}.get(t, "uint")
        u = {"char": "uchar", "short": "ushort", "int": "uint", "long": "ulong"}.get(t, t)
        return wide, f"acc[i][j] + ({wide})({u})a * ({wide})({u})b"
    return t, "fma(a, b, acc[i][j])" if fma else "acc[i][j] + a * b"


def _lanes(v: int) -> list[str]:
    return [".s0", ".s1", ".s2", ".s3"][:v]


def _load_tile(cfg: Config, lay: Layout, op: str) -> tuple[str, str]:
    """(the global loads of one tile of ``op`` (``"A"`` or ``"B"``) into registers ``ra`` /
    ``rb``, their stores into local memory ``As[buf]`` / ``Bs[buf]``).  A tile is ``tile`` x
    ``tk`` (A: m x k, B: n x k); a vector of 4 runs along the operand's contiguous axis:
    along the tile's own axis (A transposed, B not) or along k."""
    t = lay.t
    if op == "A":
        v, tile, along_tile, lo = lay.va, cfg.tm, lay.ta, "m0"
    else:
        v, tile, along_tile, lo = lay.vb, cfg.tn, not lay.tb, "n0"
    reg, local = ("ra", "AS") if op == "A" else ("rb", "BS")
    n_loads = tile * cfg.tk // (v * cfg.local_size)
    loads, stores = [], []
    for w in range(n_loads):
        at_w = f"(lid + {w * cfg.local_size})"
        if along_tile:  # neighbours along the tile's axis (m of A, n of B)
            per = tile // v
            ti, ki = f"({at_w} % {per}) * {v}", f"{at_w} / {per}"
        else:  # neighbours along k
            per = cfg.tk // v
            ti, ki = f"{at_w} / {per}", f"({at_w} % {per}) * {v}"
        i, k = f"({lo} + {ti})", f"(k0 + {ki})"
        if op == "A":
            inside, index = f"{i} < Mi && {k} < Ki", f"{i} * sam + {k} * sak"
        else:
            inside, index = f"{k} < Ki && {i} < Ni", f"{k} * sbk + {i} * sbn"
        inside = "" if lay.full else inside
        if v == 4:
            get = f"*(__global const {t}4 *)({op} + {index})"
            zero = f"({t}4)(0)"
        else:
            get = f"({t}){op}[{index}]"
            zero = f"({t})0"
        loads.append(f"        {reg}[{w}] = {f'({inside}) ? {get} : {zero}' if inside else get};")
        if v == 4 and along_tile:
            stores.append(f"        *(__local {t}4 *)&{local}(buf, {ki}, {ti}) = {reg}[{w}];")
        elif v == 4:
            for e, lane in enumerate(_lanes(4)):
                stores.append(f"        {local}(buf, {ki} + {e}, {ti}) = {reg}[{w}]{lane};")
        else:
            stores.append(f"        {local}(buf, {ki}, {ti}) = {reg}[{w}];")
    return "\n".join(loads), "\n".join(stores)


def _store_c(cfg: Config, lay: Layout) -> str:
    """The stores of a work-item's block of ``C`` (row ``i``'s columns as vectors where
    ``vc`` is 4)."""
    ot, t = lay.out_t, lay.t
    lines = ["    for (int i = 0; i < WM; i++) {",
             "        const I m = m0 + (i / 4) * (RM * 4) + ty * 4 + i % 4;"]
    if not lay.full:
        lines.append("        if (m >= Mi) continue;")
    lines.append("        __global " + ot + " *row = C + m * Ni;")
    lines.append("        for (int h = 0; h < WN / 4; h++) {")
    lines.append("            const I n = n0 + h * (RN * 4) + tx * 4;")
    vals = [f"({ot})({t})acc[i][h * 4 + {e}]" for e in range(4)]
    if lay.vc == 4:
        cond = "" if lay.full else "if (n < Ni) "
        lines.append(f"            {cond}*(__global {ot}4 *)(row + n) = "
                     f"({ot}4)({', '.join(vals)});")
    else:
        for e in range(4):
            cond = "" if lay.full else f"if (n + {e} < Ni) "
            lines.append(f"            {cond}row[n + {e}] = {vals[e]};")
    lines += ["        }", "    }"]
    return "\n".join(lines)


def source(cfg: Config, lay: Layout) -> str:
    """OpenCL C of the batched product ``mm`` for ``cfg`` and ``lay``.

    Its arguments: ``M, N, K`` (long), the tile columns ``tn`` and tile rows ``tm`` of
    ``C``, then ``C``, its element offset, ``A``, its offset and row and column strides,
    ``B``, its offset and strides, then per batch axis its length and ``A``'s and ``B``'s
    strides (0 where broadcast).  One-dimensional launch: ``tn * tm * batches`` groups of
    ``cfg.local_size``."""
    t = lay.t
    acc_t, step = _step(lay.kind, t, lay.fma)
    params = ["const long M", "const long N", "const long K", "const long tn",
              "const long tm", f"__global {lay.out_t} *c", "const long c_off",
              f"__global const {lay.a_t} *pa", "const long a_off", "const long a_sm",
              "const long a_sk", f"__global const {lay.b_t} *pb", "const long b_off",
              "const long b_sk", "const long b_sn"]
    batch = []
    for k in range(lay.nbd):
        params += [f"const long d{k}", f"const long a_s{k}", f"const long b_s{k}"]
    for k in reversed(range(lay.nbd)):  # the batch index, split into the (merged) batch axes
        batch.append(f"    q = r % d{k}; r /= d{k}; ao += q * a_s{k}; bo += q * b_s{k};")
    head = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if "double" in (
        t, lay.a_t, lay.b_t, lay.out_t) else ""
    nbuf = 2 if cfg.db else 1
    load_a, store_a = _load_tile(cfg, lay, "A")
    load_b, store_b = _load_tile(cfg, lay, "B")
    na = cfg.tm * cfg.tk // (lay.va * cfg.local_size)
    nb = cfg.tn * cfg.tk // (lay.vb * cfg.local_size)
    ra_t = f"{t}4" if lay.va == 4 else t
    rb_t = f"{t}4" if lay.vb == 4 else t
    reads = []
    for g in range(cfg.wm // 4):
        reads.append(f"            {{ const {t}4 v = *(__local const {t}4 *)"
                     f"&AS(cur, k, {g} * (RM * 4) + ty * 4);")
        reads.append("              " + " ".join(
            f"a_[{g * 4 + e}] = v{lane};" for e, lane in enumerate(_lanes(4))) + " }")
    for g in range(cfg.wn // 4):
        reads.append(f"            {{ const {t}4 v = *(__local const {t}4 *)"
                     f"&BS(cur, k, {g} * (RN * 4) + tx * 4);")
        reads.append("              " + " ".join(
            f"b_[{g * 4 + e}] = v{lane};" for e, lane in enumerate(_lanes(4))) + " }")
    compute = f"""        #pragma unroll
        for (int k = 0; k < TK; k++) {{
            {t} a_[WM], b_[WN];
{chr(10).join(reads)}
            #pragma unroll
            for (int i = 0; i < WM; i++) {{
                const {t} a = a_[i];
                #pragma unroll
                for (int j = 0; j < WN; j++) {{
                    const {t} b = b_[j];
                    acc[i][j] = {step};
                }}
            }}
        }}"""
    if cfg.db:
        loop = f"""    {{ const I k0 = 0; const int buf = 0;
{load_a}
{load_b}
{store_a}
{store_b}
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
    for (I t = 0; t < nt; t++) {{
        const int cur = t & 1;
        const int more = t + 1 < nt;
        const I k0 = (t + 1) * TK;
        if (more) {{
{load_a}
{load_b}
        }}
{compute}
        if (more) {{
            const int buf = cur ^ 1;
{store_a}
{store_b}
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
    }}"""
    else:
        loop = f"""    for (I t = 0; t < nt; t++) {{
        const I k0 = t * TK;
        const int buf = 0, cur = 0;
{load_a}
{load_b}
{store_a}
{store_b}
        barrier(CLK_LOCAL_MEM_FENCE);
{compute}
        barrier(CLK_LOCAL_MEM_FENCE);
    }}"""
    return head + f"""#define TM {cfg.tm}
#define TN {cfg.tn}
#define TK {cfg.tk}
#define WM {cfg.wm}
#define WN {cfg.wn}
#define RM {cfg.tm // cfg.wm}
#define RN {cfg.tn // cfg.wn}
#define LS {cfg.local_size}
/* element (k, m) of local tile buffer b: rows of TM + PAD (TN + PAD) elements */
#define AS(b, k, m) As[((b) * TK + (k)) * (TM + {PAD}) + (m)]
#define BS(b, k, n) Bs[((b) * TK + (k)) * (TN + {PAD}) + (n)]
typedef {lay.idx} I;
__kernel __attribute__((reqd_work_group_size(LS, 1, 1)))
void mm({", ".join(params)}) {{
    const int lid = get_local_id(0), tx = lid % RN, ty = lid / RN;
    const long g = (long)get_group_id(0);  /* tn tile columns, tm tile rows, batches */
    const I n0 = (I)((g % tn) * TN);
    const I m0 = (I)((g / tn % tm) * TM);
    const long bi = g / tn / tm;
    long r = bi, q, ao = a_off, bo = b_off;
{chr(10).join(batch)}
    const I Mi = (I)M, Ni = (I)N, Ki = (I)K;
    const I sam = (I)a_sm, sak = (I)a_sk, sbk = (I)b_sk, sbn = (I)b_sn;
    __global const {lay.a_t} *A = pa + ao;
    __global const {lay.b_t} *B = pb + bo;
    __global {lay.out_t} *C = c + c_off + bi * M * N;
    /* k-major tiles, rows padded by {PAD} (still vector-aligned) */
    __local {t}4 As4[{nbuf} * TK * (TM + {PAD}) / 4];
    __local {t}4 Bs4[{nbuf} * TK * (TN + {PAD}) / 4];
    __local {t} *As = (__local {t} *)As4, *Bs = (__local {t} *)Bs4;
    {ra_t} ra[{na}];
    {rb_t} rb[{nb}];
    {acc_t} acc[WM][WN];
    for (int i = 0; i < WM; i++)
        for (int j = 0; j < WN; j++) acc[i][j] = 0;
    const I nt = (Ki + TK - 1) / TK;
{loop}
{_store_c(cfg, lay)}
}}
"""


_INT_MAX = 2**31 - 1


def layout(cfg: Config, t: str, kind: str, a_t: str, b_t: str, out_t: str, M: int, N: int,
           K: int, a: tuple[int, int, int, tuple[int, ...]],
           b: tuple[int, int, int, tuple[int, ...]], c_off: int, fma: bool = False
           ) -> Layout:
    """The :class:`Layout` of one product under ``cfg``: ``a`` is ``A``'s (element offset,
    row stride, column stride, batch strides), ``b`` is ``B``'s (offset, ``k`` stride,
    ``n`` stride, batch strides), ``c_off`` the result's offset (elements, all of them);
    ``fma``: the device has a hardware fused multiply-add (used for floating loop types).

    Examples
    --------
    >>> cfg = Config(128, 128, 8, 8, 8, True)
    >>> lay = layout(cfg, "float", "f", "float", "float", "float", 256, 256, 64,
    ...              (0, 64, 1, ()), (0, 256, 1, ()), 0)
    >>> (lay.va, lay.vb, lay.vc, lay.full, lay.idx)
    (4, 4, 4, True, 'int')
    """
    a_off, a_sm, a_sk, a_bs = a
    b_off, b_sk, b_sn, b_bs = b
    ls = cfg.local_size
    # an operand stored column by column (a transposed view) is read along its columns
    ta = M > 1 and abs(a_sm) < abs(a_sk)
    tb = N > 1 and abs(b_sk) < abs(b_sn)

    def aligned(*vals: int) -> bool:
        return all(v % 4 == 0 for v in vals)

    va = vb = 1
    if a_t == t and (cfg.tm * cfg.tk) % (4 * ls) == 0 and aligned(a_off, *a_bs):
        if (a_sm == 1 and M % 4 == 0 and aligned(a_sk)) if ta else \
                (a_sk == 1 and K % 4 == 0 and aligned(a_sm)):
            va = 4
    if b_t == t and (cfg.tn * cfg.tk) % (4 * ls) == 0 and aligned(b_off, *b_bs):
        if (b_sk == 1 and K % 4 == 0 and aligned(b_sn)) if tb else \
                (b_sn == 1 and N % 4 == 0 and aligned(b_sk)):
            vb = 4
    vc = 4 if N % 4 == 0 and c_off % 4 == 0 else 1
    full = M % cfg.tm == 0 and N % cfg.tn == 0 and K % cfg.tk == 0
    # the largest index taken relative to an operand's first element (rows and columns past
    # the edges included: they are computed, not read)
    reach = max((M + cfg.tm) * abs(a_sm) + (K + cfg.tk) * abs(a_sk),
                (K + cfg.tk) * abs(b_sk) + (N + cfg.tn) * abs(b_sn), (M + cfg.tm) * N)
    return Layout(t, kind, a_t, b_t, out_t, len(a_bs), ta, tb, va, vb, vc, full,
                  "int" if reach <= _INT_MAX else "long", fma and kind == "f")
