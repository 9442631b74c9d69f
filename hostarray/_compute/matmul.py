"""Matrix products on the device: ``matmul``, ``tensordot`` and the ``@`` operators.

One generated kernel computes a batch of products ``C[b] = A[b] @ B[b]``.  The
operands are their storages' whole buffers with an element offset and element
strides (rows, columns and each batch axis), so transposed, strided and
broadcast views need no copy; the result is a new contiguous pooled array.

The kernel is tiled: a work-group of ``TS x RTS`` (32 x 8 = 256) work-items
computes a ``TS x TS`` (32 x 32) tile of ``C``, each work-item ``WPT`` (4)
outputs of one column.  Per step along ``K`` the group loads a 32 x 32 tile of
``A`` and of ``B`` into local memory (zero outside the matrices, so edges need
no special case: a padded product is never stored); every loaded element is
then used 32 times from local memory.  Why 32: a row of 32 work-items reads 32
neighbouring elements (one 128-byte transaction for float on a GPU whose warps
are 32 wide) and writes 32 neighbouring outputs; 32 x 8 is the generated
kernels' group size (:data:`launch.GROUP`, 256); two tiles of 8-byte elements
take 16 KiB of local memory, half of OpenCL's guaranteed minimum, so two or more
groups fit on one compute unit; 4 outputs per work-item reuse each ``B`` value
from a register 4 times.  16 x 16 tiles would read every element twice as
often from global memory; 64 x 64 tiles of 8-byte types need 64 KiB, more local
memory than many devices give one group.

The launch is one-dimensional, like every generated kernel's: the group's
number gives its tile column, tile row and batch index, so no grid dimension
limits the batch (NVIDIA allows only 65535 groups in the second and third).

The data types are numpy's: ``np.matmul``'s loop for the operands' types
gives the type operands are converted to and the result type.  Integer
products and sums wrap (computed unsigned, as numpy's do in the loop type);
``bool`` is the logical or of ands (numpy's); floating sums run in the loop
type.  What stays on the host: shape errors (the host raises numpy's), empty
operands or results, complex and float16, and ``tensordot`` whose axes can't
be grouped into one matrix per operand without a copy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._array import HostPtrArray, _view
from .._devices import Device
from .._stats import COUNTERS
from . import pool, target
from .elementwise import _layout, run
from .launch import GROUP, array_arg, c_type, compiled, enqueue, supports

__all__ = ["TS", "device_matmul", "device_tensordot", "product"]

HPA = HostPtrArray

TS = 32  # a work-group computes a TS x TS tile of the result
RTS = GROUP // TS  # work-items of a group along the rows (8)
WPT = TS // RTS  # outputs per work-item (4, rows RTS apart)

_WIDE = {"char": "uint", "uchar": "uint", "short": "uint", "ushort": "uint", "int": "uint",
         "uint": "uint", "long": "ulong", "ulong": "ulong"}
_UNSIGNED = {"char": "uchar", "short": "ushort", "int": "uint", "long": "ulong"}


def _step(kind: str, t: str) -> tuple[str, str]:
    """(accumulator type, ``acc = ...`` expression of ``acc``, ``a``, ``b``) per kind."""
    if kind == "b":
        return "uchar", "acc[w] | (a & b)"
    if kind in "iu":
        w, u = _WIDE[t], _UNSIGNED.get(t, t)
        return w, f"acc[w] + ({w})({u})a * ({w})({u})b"
    return t, "acc[w] + a * b"


def _loads(t: str, ta: bool, tb: bool) -> str:
    """The loads of one tile of ``A`` and of ``B``: neighbouring work-items read
    neighbouring columns (k of A, n of B), or, where the operand is stored the other way
    round (``ta``, ``tb``: a transposed view), neighbouring rows: neighbours in memory
    either way (coalesced on a GPU)."""
    a_ix = ("As[tx][row]", "m0 + tx", "k0 + row") if ta else ("As[row][tx]", "m0 + row",
                                                              "k0 + tx")
    b_ix = ("Bs[tx][row]", "k0 + tx", "n0 + row") if tb else ("Bs[row][tx]", "k0 + row",
                                                              "n0 + tx")
    return f"""            {{ const long am = {a_ix[1]}, ak = {a_ix[2]};
              {a_ix[0]} = (am < M && ak < K) ? ({t})pa[ao + am * a_sm + ak * a_sk] : ({t})0; }}
            {{ const long bk = {b_ix[1]}, bn = {b_ix[2]};
              {b_ix[0]} = (bk < K && bn < N) ? ({t})pb[bo + bk * b_sk + bn * b_sn] : ({t})0; }}"""


def _source(t: str, kind: str, a_t: str, b_t: str, out_t: str, nbd: int, ta: bool,
            tb: bool) -> str:
    """OpenCL C of the tiled batched product: loop type ``t`` (numpy kind ``kind``),
    stored operand types ``a_t``, ``b_t``, result type ``out_t``, ``nbd`` batch axes,
    operands read along rows (``ta``, ``tb``; see :func:`_loads`)."""
    acc_t, step = _step(kind, t)
    params = ["const long M", "const long N", "const long K", "const long tn",
              "const long tm",
              f"__global {out_t} *c", "const long c_off",
              f"__global const {a_t} *pa", "const long a_off", "const long a_sm",
              "const long a_sk",
              f"__global const {b_t} *pb", "const long b_off", "const long b_sk",
              "const long b_sn"]
    batch = []
    for k in range(nbd):
        params += [f"const long d{k}", f"const long a_s{k}", f"const long b_s{k}"]
    for k in reversed(range(nbd)):  # the batch index, split into the (merged) batch axes
        batch.append(f"    q = r % d{k}; r /= d{k}; ao += q * a_s{k}; bo += q * b_s{k};")
    head = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if "double" in (
        t, a_t, b_t, out_t) else ""
    return head + f"""#define TS {TS}
#define WPT {WPT}
#define RTS {RTS}
__kernel __attribute__((reqd_work_group_size(TS * RTS, 1, 1)))
void mm({", ".join(params)}) {{
    const int tx = get_local_id(0) % TS, ty = get_local_id(0) / TS;
    const long g = (long)get_group_id(0);  /* tn tile columns, tm tile rows, batches */
    const long n0 = (g % tn) * TS, n = n0 + tx;
    const long m0 = (g / tn % tm) * TS;
    const long bi = g / tn / tm;
    long r = bi, q, ao = a_off, bo = b_off;
{chr(10).join(batch)}
    /* one column of padding: a transposed load writes a column without bank conflicts */
    __local {t} As[TS][TS + 1];
    __local {t} Bs[TS][TS + 1];
    {acc_t} acc[WPT];
    for (int w = 0; w < WPT; w++) acc[w] = 0;
    for (long k0 = 0; k0 < K; k0 += TS) {{
        for (int w = 0; w < WPT; w++) {{
            const int row = ty + w * RTS;
{_loads(t, ta, tb)}
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS; k++) {{
            const {t} b = Bs[k][tx];
            for (int w = 0; w < WPT; w++) {{
                const {t} a = As[ty + w * RTS][k];
                acc[w] = {step};
            }}
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    if (n >= N) return;
    const long co = c_off + bi * M * N;
    for (int w = 0; w < WPT; w++) {{
        const long m = m0 + ty + w * RTS;
        if (m < M) c[co + m * N + n] = ({out_t})({t})acc[w];
    }}
}}
"""


def _types(dev: Device, x1: HPA, x2: HPA) -> tuple[np.dtype, np.dtype] | None:
    """(loop type, result type) of ``np.matmul`` on ``x1``, ``x2``, or ``None``."""
    d1, d2 = x1._a.dtype, x2._a.dtype
    try:
        loop = np.matmul.resolve_dtypes((d1, d2, None))
    except (TypeError, ValueError):
        return None
    lt, out_dt = loop[0], loop[2]
    if loop[1] != lt or lt.kind not in "biuf":
        return None
    if not all(supports(dev, d) for d in (d1, d2, lt, out_dt)):
        return None
    return lt, out_dt


def product(dev: Device, x1: HPA, x2: HPA, m1: np.ndarray, m2: np.ndarray
            ) -> HPA | None:
    """``np.matmul(m1, m2)`` on ``dev``, where ``m1``, ``m2`` are views of ``x1``'s and
    ``x2``'s storages (at least 1-D), as a new device-newest array; ``None`` where the
    device can't (nothing happened then).  Counts nothing."""
    if m1.ndim == 0 or m2.ndim == 0:
        return None
    types = _types(dev, x1, x2)
    if types is None:
        return None
    lt, out_dt = types
    K = m1.shape[-1]
    if m2.shape[-2 if m2.ndim >= 2 else 0] != K:
        return None  # the host raises numpy's error
    M = m1.shape[-2] if m1.ndim >= 2 else 1
    N = m2.shape[-1] if m2.ndim >= 2 else 1
    b1, b2 = m1.shape[:-2], m2.shape[:-2]
    try:
        bshape = np.broadcast_shapes(b1, b2)
    except ValueError:
        return None
    nb = math.prod(bshape)
    if M * N * K * nb == 0:
        return None
    v1, v2 = array_arg(_view(x1, m1), dev, "r"), array_arg(_view(x2, m2), dev, "r")
    if v1 is None or v2 is None:
        return None
    shape = bshape + ((M,) if m1.ndim >= 2 else ()) + ((N,) if m2.ndim >= 2 else ())
    out = pool.result(dev, shape, out_dt)
    o = array_arg(out, dev, "w")
    if o is None:
        return None
    a_sm, a_sk = (v1.strides[-2], v1.strides[-1]) if m1.ndim >= 2 else (0, v1.strides[0])
    b_sk, b_sn = (v2.strides[-2], v2.strides[-1]) if m2.ndim >= 2 else (v2.strides[0], 0)
    sts = []
    for m, v, nd in ((m1, v1, len(b1)), (m2, v2, len(b2))):
        pad = len(bshape) - nd
        sts.append(tuple(0 if k < pad or m.shape[k - pad] == 1 else v.strides[k - pad]
                         for k in range(len(bshape))))
    dims, (sa, sb) = _layout(bshape, sts)
    # an operand stored column by column (a transposed view) is read along its columns
    ta = M > 1 and abs(a_sm) < abs(a_sk)
    tb = N > 1 and abs(b_sk) < abs(b_sn)
    src = _source(c_type(lt), lt.kind, c_type(x1._a.dtype), c_type(x2._a.dtype),
                  c_type(out_dt), len(dims), ta, tb)
    i64 = np.int64
    tn, tm = -(-N // TS), -(-M // TS)
    call: list[Any] = [i64(M), i64(N), i64(K), i64(tn), i64(tm), o, i64(o.offset),
                       v1, i64(v1.offset), i64(a_sm), i64(a_sk),
                       v2, i64(v2.offset), i64(b_sk), i64(b_sn)]
    for k, d in enumerate(dims):
        call += [i64(d), i64(sa[k]), i64(sb[k])]
    enqueue(dev, compiled(dev, src, "mm"), "matmul", tn * tm * nb * GROUP, call)
    return out


def _result_nbytes(x1: HPA, x2: HPA) -> int:
    """Bytes of ``x1 @ x2``'s result, as far as the shapes say (0 where they don't fit)."""
    s1, s2 = x1._a.shape, x2._a.shape
    try:
        bshape = np.broadcast_shapes(s1[:-2], s2[:-2])
    except ValueError:
        return 0
    m = s1[-2] if len(s1) >= 2 else 1
    n = s2[-1] if len(s2) >= 2 else 1
    try:
        item = np.matmul.resolve_dtypes((x1._a.dtype, x2._a.dtype, None))[2].itemsize
    except (TypeError, ValueError):
        return 0
    return math.prod(bshape) * m * n * item


def _matmul(dev: Device, x1: Any, x2: Any, out: HPA | None) -> HPA | None:
    if type(x1) is not HPA or type(x2) is not HPA:
        return None  # a Python scalar: the host raises numpy's error
    if out is None:
        return product(dev, x1, x2, x1._a, x2._a)
    oa = out._a
    if not oa.flags.writeable or not supports(dev, oa.dtype):
        return None
    types = _types(dev, x1, x2)
    if types is None or not np.can_cast(types[1], oa.dtype, "same_kind"):
        return None  # the host raises numpy's casting error
    # in place (x1 @= x2): into a temporary first, as numpy does when out overlaps an input
    r = product(dev, x1, x2, x1._a, x2._a)
    if r is None or r._a.shape != oa.shape:
        return None
    return run(dev, "matmul", "a", [r], r._a.dtype, oa.dtype, oa.shape, out)


def device_matmul(x1: Any, x2: Any, out: HPA | None = None) -> HPA | None:
    """``x1 @ x2`` (into ``out`` for ``x1 @= x2``) on the device holding the operands'
    newest data, or ``None``: the host path computes it (see :mod:`hostarray._compute`;
    the result counts in the size threshold: an outer product can be far larger than
    its operands)."""
    both = type(x1) is HPA and type(x2) is HPA
    dev = target((x1, x2), _result_nbytes(x1, x2) if both else 0)
    if dev is None:
        return None
    r = _matmul(dev, x1, x2, out)
    if r is None:
        COUNTERS.add(host_fallbacks=1)
    elif out is None:  # the in-place copy counted the operation already
        COUNTERS.add(device_ops=1)
    return r


def _axes(n1: int, n2: int, axes: Any) -> tuple[list[int], list[int]] | None:
    """The contracted axes of ``tensordot``, non-negative, or ``None`` (the host raises)."""
    try:
        if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
            k = int(axes)
            if k < 0 or k > n1 or k > n2:
                return None
            return list(range(n1 - k, n1)), list(range(k))
        a1, a2 = (list(map(int, a)) if isinstance(a, Sequence) else [int(a)] for a in axes)
    except (TypeError, ValueError):
        return None
    if len(a1) != len(a2):
        return None
    if any(not -n1 <= a < n1 for a in a1) or any(not -n2 <= a < n2 for a in a2):
        return None
    a1, a2 = [a % n1 for a in a1], [a % n2 for a in a2]
    if len(set(a1)) != len(a1) or len(set(a2)) != len(a2):
        return None
    return a1, a2


def _matrices(a: np.ndarray, b: np.ndarray, c1: list[int], c2: list[int]
              ) -> tuple[np.ndarray, np.ndarray] | None:
    """``a`` as a (free, contracted) matrix and ``b`` as a (contracted, free) one, both
    views (the pairs of contracted axes may be taken in any order), or ``None``."""
    f1 = [i for i in range(a.ndim) if i not in c1]
    f2 = [j for j in range(b.ndim) if j not in c2]
    K = math.prod(a.shape[i] for i in c1)
    m, n = math.prod(a.shape[i] for i in f1), math.prod(b.shape[j] for j in f2)
    pairs = list(zip(c1, c2))
    # the given order, or the pairs by a's strides, or by b's: one of them often lets both
    # operands merge their contracted axes into one stride
    for order in (pairs, sorted(pairs, key=lambda p: -a.strides[p[0]]),
                  sorted(pairs, key=lambda p: -b.strides[p[1]])):
        o1, o2 = [p[0] for p in order], [p[1] for p in order]
        m1 = a.transpose(f1 + o1).reshape((m, K))
        m2 = b.transpose(o2 + f2).reshape((K, n))
        # a copy shares no memory with the operand (numpy 2.0's reshape has no copy=False)
        if np.may_share_memory(m1, a) and np.may_share_memory(m2, b):
            return m1, m2
    return None


def _tensordot(dev: Device, x1: HPA, x2: HPA, axes: Any) -> HPA | None:
    a, b = x1._a, x2._a
    ax = _axes(a.ndim, b.ndim, axes)
    if ax is None:
        return None
    c1, c2 = ax
    if any(a.shape[i] != b.shape[j] for i, j in zip(c1, c2)):
        return None
    mats = _matrices(a, b, c1, c2)
    if mats is None:
        return None  # the operands' axes need a copy to be matrices: the host does that
    r = product(dev, x1, x2, *mats)
    if r is None:
        return None
    shape = tuple(n for i, n in enumerate(a.shape) if i not in c1) + \
        tuple(n for j, n in enumerate(b.shape) if j not in c2)
    return _view(r, r._a.reshape(shape))


def device_tensordot(x1: Any, x2: Any, axes: Any) -> HPA | None:
    """``tensordot(x1, x2, axes=axes)`` on the device holding the operands' newest data,
    or ``None``: the host path computes it (see :mod:`hostarray._compute`)."""
    nbytes = 0
    if type(x1) is HPA and type(x2) is HPA:
        ax = _axes(x1.ndim, x2.ndim, axes)
        if ax is not None:
            nbytes = max(x1._a.itemsize, x2._a.itemsize) * math.prod(
                [n for i, n in enumerate(x1.shape) if i not in ax[0]]
                + [n for j, n in enumerate(x2.shape) if j not in ax[1]])
    dev = target((x1, x2), nbytes)
    if dev is None:
        return None
    r = _tensordot(dev, x1, x2, axes) if type(x1) is HPA and type(x2) is HPA else None
    COUNTERS.add(**({"device_ops": 1} if r is not None else {"host_fallbacks": 1}))
    return r
