"""Matrix products on the device: ``matmul``, ``tensordot`` and the ``@`` operators.

One generated kernel computes a batch of products ``C[b] = A[b] @ B[b]``.  The
operands are their storages' whole buffers with an element offset and element
strides (rows, columns and each batch axis), so transposed, strided and
broadcast views need no copy; the result is a new contiguous pooled array.

The kernel (:mod:`hostarray._compute.matmul_source`) is register-blocked and tiled: a
work-group computes a block of ``C`` (64 x 64 to 128 x 128), each work-item a block of 4 x 4
to 8 x 8 outputs in registers, from tiles of ``A`` and ``B`` staged in local memory (read
as vectors of 4, double-buffered), with vector loads from global memory where an operand's
contiguous axis allows them.  Its tile configuration is tuned per device at the device's
first large float32 product and cached (:mod:`hostarray._compute.matmul_tune`;
``HOSTARRAY_MATMUL_TUNE``).  On the H200 (float32) the previous fixed kernel (scalar loads,
no double buffering) ran at 2.1-2.3 times cuBLAS's time from n = 2048 to 8192 and 3.7 times
at 1024.

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
from dataclasses import replace
from typing import Any

import numpy as np

from .._array import HostPtrArray, _view
from .._devices import Device
from .._stats import COUNTERS
from ..errors import BuildFailed
from . import matmul_tune, pool, register
from .elementwise import run
from .kernel_text import _layout
from .launch import array_arg, c_type, compiled, enqueue, supports
from .matmul_source import layout, source

__all__ = ["contracted_axes", "matmul", "product", "tensordot"]

HPA = HostPtrArray


_FMA: dict[tuple[Device, int], bool] = {}
_REFUSED: set[tuple[Device, str]] = set()  # kernels a device's driver refused to build


def _fma(dev: Device, itemsize: int) -> bool:
    """:func:`matmul_tune.has_fma`, read once per device and size."""
    v = _FMA.get((dev, itemsize))
    if v is None:
        v = _FMA[dev, itemsize] = matmul_tune.has_fma(dev, itemsize)
    return v


def _aligned_base(x: HPA, offset: int, vector: int) -> bool:
    """Whether the first element of ``x``'s storage (``offset`` elements before the view's
    first one) lies at a multiple of ``vector`` elements in host memory: the vector loads'
    alignment where a driver uses the host's memory itself."""
    a = x._a
    return (a.__array_interface__["data"][0] - offset * a.itemsize) % (vector * a.itemsize) == 0


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
    # the tile configuration: tuned for this device (its first large float32 product tunes
    # it, before anything is taken or locked here), else the built-in choice
    cfg = matmul_tune.choose(dev, M, N, K, nb, lt.itemsize)
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
    t = c_type(lt)
    a_t, b_t, o_t = c_type(x1._a.dtype), c_type(x2._a.dtype), c_type(out_dt)
    lay = layout(cfg, t, lt.kind, a_t, b_t, o_t, M, N, K, (v1.offset, a_sm, a_sk, sa),
                 (v2.offset, b_sk, b_sn, sb), o.offset,
                 lt.kind == "f" and _fma(dev, lt.itemsize))
    if lay.va == 4 and not _aligned_base(v1.x, v1.offset, 4):
        lay = replace(lay, va=1)
    if lay.vb == 4 and not _aligned_base(v2.x, v2.offset, 4):
        lay = replace(lay, vb=1)
    tn, tm = -(-N // cfg.tn), -(-M // cfg.tm)
    # plain ints: the kernel's scalars are declared (launch.compiled), pyopencl packs them
    call: list[Any] = [M, N, K, tn, tm, o, o.offset, v1, v1.offset, a_sm, a_sk,
                       v2, v2.offset, b_sk, b_sn]
    for k, d in enumerate(dims):
        call += [d, sa[k], sb[k]]
    ls = cfg.local_size
    src = source(cfg, lay)
    if (dev, src) in _REFUSED:
        return None
    try:
        kernel = compiled(dev, src, "mm")
    except BuildFailed:
        # a driver that can't build this kernel: the host computes such products (counted
        # as host fallbacks), never an error the user's product did not cause
        _REFUSED.add((dev, src))
        return None
    enqueue(dev, kernel, "matmul", tn * tm * nb * ls, call,
            new=(out._s,), group=ls)  # taken from the pool above: no other thread reaches it
    return out


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


def matmul(dev: Device, x1: Any, x2: Any, out: HPA | None = None) -> HPA | None:
    """``x1 @ x2`` (into ``out`` for ``x1 @= x2``) on ``dev``, or ``None``: the host path
    computes it (counted as a host fallback)."""
    r = _matmul(dev, x1, x2, out)
    if r is None:
        COUNTERS.add(host_fallbacks=1)
    elif out is None:  # the in-place copy counted the operation already
        COUNTERS.add(device_ops=1)
    return r


def contracted_axes(n1: int, n2: int, axes: Any) -> tuple[list[int], list[int]] | None:
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
    ax = contracted_axes(a.ndim, b.ndim, axes)
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


def tensordot(dev: Device, x1: Any, x2: Any, axes: Any) -> HPA | None:
    """``tensordot(x1, x2, axes=axes)`` on ``dev``, or ``None``: the host path computes it
    (counted as a host fallback)."""
    r = _tensordot(dev, x1, x2, axes) if type(x1) is HPA and type(x2) is HPA else None
    COUNTERS.add(**({"device_ops": 1} if r is not None else {"host_fallbacks": 1}))
    return r


# what the device path computes, for hostarray._compute.device_functions() (the docs' tables)
register(["matmul", "linalg.matmul"], "float16, complex, empty on host")
register(["tensordot", "linalg.tensordot"],
         "float16, complex, empty on host; axes that need a copy on host")
