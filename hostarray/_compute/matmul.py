"""Matrix products on the device: ``matmul``, ``tensordot`` and the ``@`` operators.

One generated kernel computes a batch of products ``C[b] = A[b] @ B[b]``.  The
operands are their storages' whole buffers with an element offset and element
strides (rows, columns and each batch axis), so transposed, strided and
broadcast views need no copy; the result is a new contiguous pooled array.

The kernel is tiled: a work-group of ``RTS x RTS`` (16 x 16 = 256) work-items
computes a ``TS x TS`` tile of ``C`` (64 x 64, or 128 x 128 where the product
has a large tile for every compute unit), each work-item a 4 x 4 (8 x 8) block of
outputs ``RTS`` apart in both directions (so that a row of 16 work-items reads 16
neighbouring elements of local memory and stores 16 neighbouring outputs).  Per
step along ``K`` the group loads a ``TS x KT`` tile of ``A`` and a ``KT x TS``
tile of ``B`` (``KT`` 16, or 8 for the large tiles) into local memory,
neighbouring work-items reading neighbouring elements of global memory whichever
way each operand is stored (zero outside the matrices, so edges need no special
case: a padded product is never stored).  Each value read from local memory is
used 4 (8) times from a register.  The tiles take 2 x 16 x 65 or 2 x 8 x 129
elements of local memory: at most 16.5 KiB, for 8-byte types, within OpenCL's
guaranteed 32 KiB.  On the H200 (float32) this runs at 2.1-2.3 times cuBLAS's time
from n = 2048 to 8192 and 3.7 times at 1024, where the first version (32 x 32 tiles,
4 outputs per work-item) took 3.5-4.7 times.

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
from . import pool, register, target
from .elementwise import _layout, run
from .launch import GROUP, array_arg, c_type, compiled, enqueue, supports

__all__ = ["TS", "TS_LARGE", "device_matmul", "device_tensordot", "product"]

HPA = HostPtrArray

TS = 64  # a work-group computes a TS x TS tile of the result (TS_LARGE for large ones)
TS_LARGE = 128
RTS = 16  # work-items of a group along each side (RTS x RTS = GROUP = 256)
assert RTS * RTS == GROUP
# per tile size: the K extent of the tiles loaded per step (the tiles' local memory stays
# 2 x 16 x 65 or 2 x 8 x 129 elements: 16.5 KiB at most, for 8-byte types)
_KT = {TS: 16, TS_LARGE: 8}

_WIDE = {"char": "uint", "uchar": "uint", "short": "uint", "ushort": "uint", "int": "uint",
         "uint": "uint", "long": "ulong", "ulong": "ulong"}
_UNSIGNED = {"char": "uchar", "short": "ushort", "int": "uint", "long": "ulong"}


def _step(kind: str, t: str) -> tuple[str, str]:
    """(accumulator type, ``acc = ...`` expression of ``acc``, ``a``, ``b``) per kind."""
    if kind == "b":
        return "uchar", "acc[i][j] | (a & b)"
    if kind in "iu":
        w, u = _WIDE[t], _UNSIGNED.get(t, t)
        return w, f"acc[i][j] + ({w})({u})a * ({w})({u})b"
    return t, "acc[i][j] + a * b"


def _loads(t: str, ta: bool, tb: bool) -> str:
    """The loads of one step: a TS x KT tile of ``A`` into ``As[k][m]`` and a KT x TS tile
    of ``B`` into ``Bs[k][n]``, LPT elements of each per work-item.  Neighbouring work-items
    read neighbours in memory: along k for ``A`` stored by rows (along m where it is stored
    by columns, ``ta``: a transposed view), along n for ``B`` (along k for ``tb``);
    coalesced on a GPU.  Zero outside the matrices."""
    am, ak = ("e % TS", "e / TS") if ta else ("e / KT", "e % KT")
    bk, bn = ("e % KT", "e / KT") if tb else ("e / TS", "e % TS")
    return f"""        for (int w = 0; w < LPT; w++) {{
            const int e = lid + w * (RTS * RTS);
            {{ const int mi = {am}, ki = {ak};
              const long m = m0 + mi, k = k0 + ki;
              As[ki][mi] = (m < M && k < K) ? ({t})pa[ao + m * a_sm + k * a_sk] : ({t})0; }}
            {{ const int ki = {bk}, ni = {bn};
              const long k = k0 + ki, n = n0 + ni;
              Bs[ki][ni] = (k < K && n < N) ? ({t})pb[bo + k * b_sk + n * b_sn] : ({t})0; }}
        }}"""


def _source(t: str, kind: str, a_t: str, b_t: str, out_t: str, nbd: int, ta: bool,
            tb: bool, ts: int = TS) -> str:
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
    kt = _KT[ts]
    return head + f"""#define TS {ts}
#define WPT {ts // RTS}
#define RTS {RTS}
#define KT {kt}
#define LPT {ts * kt // GROUP}
__kernel __attribute__((reqd_work_group_size(RTS * RTS, 1, 1)))
void mm({", ".join(params)}) {{
    const int lid = get_local_id(0), tx = lid % RTS, ty = lid / RTS;
    const long g = (long)get_group_id(0);  /* tn tile columns, tm tile rows, batches */
    const long n0 = (g % tn) * TS;
    const long m0 = (g / tn % tm) * TS;
    const long bi = g / tn / tm;
    long r = bi, q, ao = a_off, bo = b_off;
{chr(10).join(batch)}
    /* one column of padding: a load along k writes a column without bank conflicts */
    __local {t} As[KT][TS + 1];
    __local {t} Bs[KT][TS + 1];
    {acc_t} acc[WPT][WPT];
    for (int i = 0; i < WPT; i++)
        for (int j = 0; j < WPT; j++) acc[i][j] = 0;
    for (long k0 = 0; k0 < K; k0 += KT) {{
{_loads(t, ta, tb)}
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < KT; k++) {{
            {t} ar[WPT], br[WPT];
            for (int i = 0; i < WPT; i++) ar[i] = As[k][ty + i * RTS];
            for (int j = 0; j < WPT; j++) br[j] = Bs[k][tx + j * RTS];
            for (int i = 0; i < WPT; i++) {{
                const {t} a = ar[i];
                for (int j = 0; j < WPT; j++) {{
                    const {t} b = br[j];
                    acc[i][j] = {step};
                }}
            }}
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    const long co = c_off + bi * M * N;
    for (int i = 0; i < WPT; i++) {{
        const long m = m0 + ty + i * RTS;
        if (m >= M) break;
        for (int j = 0; j < WPT; j++) {{
            const long n = n0 + tx + j * RTS;
            if (n < N) c[co + m * N + n] = ({out_t})({t})acc[i][j];
        }}
    }}
}}
"""


_UNITS: dict[Device, int] = {}


def _units(dev: Device) -> int:
    """The device's compute units (``CL_DEVICE_MAX_COMPUTE_UNITS``), read once."""
    n = _UNITS.get(dev)
    if n is None:
        n = _UNITS[dev] = int(dev._cl_device.max_compute_units)
    return n


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
    # large tiles (8 x 8 outputs per work-item: twice the multiply-adds per value read from
    # local memory) where they still give every compute unit a group; measured on the H200
    # (132 units), float32: n = 2048 1.11 -> 0.89 ms, 4096 7.05 -> 6.09 ms, but 1024 (64
    # groups) 0.27 -> 0.45 ms
    ts = TS_LARGE if -(-M // TS_LARGE) * -(-N // TS_LARGE) * nb >= _units(dev) else TS
    src = _source(c_type(lt), lt.kind, c_type(x1._a.dtype), c_type(x2._a.dtype),
                  c_type(out_dt), len(dims), ta, tb, ts)
    tn, tm = -(-N // ts), -(-M // ts)
    # plain ints: the kernel's scalars are declared (launch.compiled), pyopencl packs them
    call: list[Any] = [M, N, K, tn, tm, o, o.offset, v1, v1.offset, a_sm, a_sk,
                       v2, v2.offset, b_sk, b_sn]
    for k, d in enumerate(dims):
        call += [d, sa[k], sb[k]]
    enqueue(dev, compiled(dev, src, "mm"), "matmul", tn * tm * nb * GROUP, call,
            new=(out._s,))  # taken from the pool above: no other thread reaches it
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


# what the device path computes, for hostarray._compute.device_functions() (the docs' tables)
register(["matmul", "linalg.matmul"], "float16, complex, empty on host")
register(["tensordot", "linalg.tensordot"],
         "float16, complex, empty on host; axes that need a copy on host")
