"""The array API standard's ``linalg`` extension, computed on the host by numpy.

Results go on the inputs' device; batched ("stacked") inputs broadcast as the
standard specifies.  Named-tuple results follow the standard's field names.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

import numpy as np

from ._api._common import dev_of, host, result
from ._api.linalg_main import matmul, matrix_transpose, tensordot, vecdot
from ._array import HostPtrArray
from ._placement import device_newest, result_device, try_device

__all__ = ["cholesky", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv",
           "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer",
           "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
           "vector_norm", "EigResult", "EighResult", "QRResult", "SlogdetResult", "SVDResult"]

npl = np.linalg
builtin_max = max


class EigResult(NamedTuple):
    """Result of :func:`eig`: ``(eigenvalues, eigenvectors)``, also by name.

    Attributes
    ----------
    eigenvalues : HostPtrArray
        The eigenvalues (complex).
    eigenvectors : HostPtrArray
        The eigenvectors, one per column.

    Examples
    --------
    >>> import hostarray as ha
    >>> w, v = ha.linalg.eig(ha.asarray([[2.0, 0.0], [0.0, 3.0]]))
    >>> sorted(w.real.tolist())
    [2.0, 3.0]
    """

    eigenvalues: HostPtrArray
    eigenvectors: HostPtrArray


class EighResult(NamedTuple):
    """Result of :func:`eigh`: ``(eigenvalues, eigenvectors)``, also by name.

    Attributes
    ----------
    eigenvalues : HostPtrArray
        The eigenvalues, ascending.
    eigenvectors : HostPtrArray
        The orthonormal eigenvectors, one per column.

    Examples
    --------
    >>> import hostarray as ha
    >>> r = ha.linalg.eigh(ha.asarray([[2.0, 1.0], [1.0, 2.0]]))
    >>> r.eigenvalues.tolist()
    [1.0, 3.0]
    """

    eigenvalues: HostPtrArray
    eigenvectors: HostPtrArray


class QRResult(NamedTuple):
    """Result of :func:`qr`: ``(Q, R)``, also by name.

    Attributes
    ----------
    Q : HostPtrArray
        The matrix with orthonormal columns.
    R : HostPtrArray
        The upper-triangular matrix.

    Examples
    --------
    >>> import numpy as np, hostarray as ha
    >>> a = ha.asarray([[1.0, 2.0], [3.0, 4.0]])
    >>> q, r = ha.linalg.qr(a)
    >>> bool(np.allclose(np.asarray(q @ r), np.asarray(a)))
    True
    """

    Q: HostPtrArray
    R: HostPtrArray


class SlogdetResult(NamedTuple):
    """Result of :func:`slogdet`: ``(sign, logabsdet)``, also by name.

    Attributes
    ----------
    sign : HostPtrArray
        The sign of the determinant (0 for a singular matrix).
    logabsdet : HostPtrArray
        The natural logarithm of its absolute value.

    Examples
    --------
    >>> import hostarray as ha
    >>> r = ha.linalg.slogdet(ha.asarray([[2.0, 0.0], [0.0, -3.0]]))
    >>> float(r.sign), round(float(r.logabsdet), 6)
    (-1.0, 1.791759)
    """

    sign: HostPtrArray
    logabsdet: HostPtrArray


class SVDResult(NamedTuple):
    """Result of :func:`svd`: ``(U, S, Vh)``, also by name.

    Attributes
    ----------
    U : HostPtrArray
        The left singular vectors.
    S : HostPtrArray
        The singular values, descending.
    Vh : HostPtrArray
        The right singular vectors, transposed (conjugated).

    Examples
    --------
    >>> import hostarray as ha
    >>> r = ha.linalg.svd(ha.asarray([[3.0, 0.0], [0.0, 4.0]]))
    >>> r.S.tolist()
    [4.0, 3.0]
    """

    U: HostPtrArray
    S: HostPtrArray
    Vh: HostPtrArray


def _float(a: np.ndarray) -> np.ndarray:
    """Integer and bool input computed in the default floating-point type."""
    return a if a.dtype.kind in "fc" else a.astype(np.float64)


def cholesky(x: HostPtrArray, /, *, upper: bool = False) -> HostPtrArray:
    """Cholesky factor of symmetric (Hermitian) positive-definite matrices: ``L`` with
    ``x = L @ L^H``, or ``U`` with ``x = U^H @ U`` if ``upper``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.linalg.cholesky(ha.asarray([[4.0, 2.0], [2.0, 2.0]]))
    HostPtrArray([[2., 0.],
                  [1., 1.]], dtype=float64)
    """
    return result(npl.cholesky(_float(host(x)), upper=upper), dev_of(x))


def cross(x1: HostPtrArray, x2: HostPtrArray, /, *, axis: int = -1) -> HostPtrArray:
    """Cross product of 3-element vectors along ``axis`` (broadcast).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.linalg.cross(ha.asarray([1, 0, 0]), ha.asarray([0, 1, 0]))
    HostPtrArray([0, 0, 1], dtype=int64)
    """
    a, b = host(x1), host(x2)
    dev = result_device(x1, x2)
    if a.ndim == 0 or b.ndim == 0 or a.shape[axis] != 3 or b.shape[axis] != 3:
        raise ValueError("cross needs vectors of size 3 along axis")
    # the standard broadcasts all other axes and keeps axis in place
    return result(npl.cross(a, b, axis=axis), dev)


def det(x: HostPtrArray, /) -> HostPtrArray:
    """Determinant of each square matrix in ``x``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.linalg.det(ha.asarray([[1.0, 2.0], [3.0, 4.0]]))
    HostPtrArray(-2., dtype=float64)
    """
    return result(npl.det(_float(host(x))), dev_of(x))


def diagonal(x: HostPtrArray, /, *, offset: int = 0) -> HostPtrArray:
    """The ``offset`` diagonal of each matrix in ``x`` (last two axes).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.linalg.diagonal(ha.asarray([[1, 2], [3, 4]]))
    HostPtrArray([1, 4], dtype=int64)
    """
    return result(npl.diagonal(host(x), offset=offset).copy(), dev_of(x))


def eig(x: HostPtrArray, /) -> EigResult:
    """Eigenvalues and right eigenvectors of general square matrices (complex results).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.linalg.eig(ha.asarray([[2.0, 0.0], [0.0, 3.0]])).eigenvalues
    HostPtrArray([2.+0.j, 3.+0.j], dtype=complex128)
    """
    a = _float(host(x))
    w, v = npl.eig(a)
    ct = np.result_type(a.dtype, np.complex64)
    return EigResult(result(w.astype(ct, copy=False), dev_of(x)),
                     result(v.astype(ct, copy=False), dev_of(x)))


def eigvals(x: HostPtrArray, /) -> HostPtrArray:
    """Eigenvalues of general square matrices (complex results).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.linalg.eigvals(ha.asarray([[0.0, -1.0], [1.0, 0.0]]))
    HostPtrArray([0.+1.j, 0.-1.j], dtype=complex128)
    """
    a = _float(host(x))
    ct = np.result_type(a.dtype, np.complex64)
    return result(npl.eigvals(a).astype(ct, copy=False), dev_of(x))


def eigh(x: HostPtrArray, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of symmetric (Hermitian) matrices.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.linalg.eigh(ha.asarray([[2.0, 0.0], [0.0, 1.0]])).eigenvalues
    HostPtrArray([1., 2.], dtype=float64)
    """
    w, v = npl.eigh(_float(host(x)))
    return EighResult(result(w, dev_of(x)), result(v, dev_of(x)))


def eigvalsh(x: HostPtrArray, /) -> HostPtrArray:
    """Eigenvalues (ascending) of symmetric (Hermitian) matrices.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.linalg.eigvalsh(ha.asarray([[2.0, 0.0], [0.0, 1.0]]))
    HostPtrArray([1., 2.], dtype=float64)
    """
    return result(npl.eigvalsh(_float(host(x))), dev_of(x))


def inv(x: HostPtrArray, /) -> HostPtrArray:
    """Inverse of each square matrix in ``x``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.linalg.inv(ha.asarray([[2.0, 0.0], [0.0, 4.0]]))
    HostPtrArray([[0.5 , 0.  ],
                  [0.  , 0.25]], dtype=float64)
    """
    return result(npl.inv(_float(host(x))), dev_of(x))


def matrix_norm(x: HostPtrArray, /, *, keepdims: bool = False,
                ord: int | float | Literal["fro", "nuc"] | None = "fro") -> HostPtrArray:  # noqa: A002
    """Norm of each matrix in ``x`` (``ord``: ``"fro"``, ``"nuc"``, 1, 2, inf and negatives).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.linalg.matrix_norm(ha.asarray([[3.0, 0.0], [0.0, 4.0]]))
    HostPtrArray(5., dtype=float64)
    """
    return result(npl.matrix_norm(_float(host(x)), keepdims=keepdims, ord=ord), dev_of(x))


def matrix_power(x: HostPtrArray, n: int, /) -> HostPtrArray:
    """Each square matrix of ``x`` raised to the integer power ``n``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.linalg.matrix_power(ha.asarray([[1, 1], [0, 1]]), 3)
    HostPtrArray([[1, 3],
                  [0, 1]], dtype=int64)
    """
    return result(npl.matrix_power(host(x), n), dev_of(x))


def matrix_rank(x: HostPtrArray, /, *, rtol: float | HostPtrArray | None = None) -> HostPtrArray:
    """Rank of each matrix in ``x``: singular values above ``rtol`` times the largest count.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.linalg.matrix_rank(ha.asarray([[1.0, 2.0], [2.0, 4.0]]))
    HostPtrArray(1, dtype=int64)
    """
    a = _float(host(x))
    if a.ndim < 2:
        raise ValueError("matrix_rank needs at least two dimensions")
    s = npl.svd(a, compute_uv=False)
    if rtol is None:
        tol = s.max(axis=-1, keepdims=True) * (builtin_max(a.shape[-2:]) * np.finfo(s.dtype).eps)
    else:
        r = np.asarray(host(rtol) if isinstance(rtol, HostPtrArray) else rtol)
        tol = s.max(axis=-1, keepdims=True) * r[..., np.newaxis]
    return result(np.count_nonzero(s > tol, axis=-1).astype(np.int64), result_device(x, rtol))


def outer(x1: HostPtrArray, x2: HostPtrArray, /) -> HostPtrArray:
    """Outer product of two vectors.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.linalg.outer(ha.asarray([1, 2]), ha.asarray([3, 4]))
    HostPtrArray([[3, 4],
                  [6, 8]], dtype=int64)
    """
    return result(npl.outer(host(x1), host(x2)), result_device(x1, x2))


def pinv(x: HostPtrArray, /, *, rtol: float | HostPtrArray | None = None) -> HostPtrArray:
    """Moore-Penrose pseudo-inverse of each matrix in ``x`` (singular values up to ``rtol``
    times the largest are treated as zero; default ``max(M, N) * eps``).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.linalg.pinv(ha.asarray([[2.0, 0.0], [0.0, 0.0]]))
    HostPtrArray([[0.5, 0. ],
                  [0. , 0. ]], dtype=float64)
    """
    a = _float(host(x))
    if rtol is None:
        rtol = builtin_max(a.shape[-2:]) * np.finfo(a.dtype).eps
    elif isinstance(rtol, HostPtrArray):
        rtol = host(rtol)  # type: ignore[assignment]
    return result(npl.pinv(a, rtol=rtol), result_device(x))


def qr(x: HostPtrArray, /, *, mode: Literal["reduced", "complete"] = "reduced") -> QRResult:
    """QR decomposition of each matrix in ``x``.

    Examples
    --------
    >>> import hostarray as ha
    >>> q, r = ha.linalg.qr(ha.asarray([[1.0, 0.0], [0.0, 1.0]]))
    >>> q.shape, r.shape
    ((2, 2), (2, 2))
    """
    if mode not in ("reduced", "complete"):
        raise ValueError(f"mode must be 'reduced' or 'complete', not {mode!r}")
    q, r = npl.qr(_float(host(x)), mode=mode)
    return QRResult(result(q, dev_of(x)), result(r, dev_of(x)))


def slogdet(x: HostPtrArray, /) -> SlogdetResult:
    """Sign and natural log of the absolute determinant of each square matrix in ``x``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.linalg.slogdet(ha.asarray([[-2.0, 0.0], [0.0, 1.0]])).sign
    HostPtrArray(-1., dtype=float64)
    """
    sign, logabs = npl.slogdet(_float(host(x)))
    return SlogdetResult(result(sign, dev_of(x)), result(logabs, dev_of(x)))


def solve(x1: HostPtrArray, x2: HostPtrArray, /) -> HostPtrArray:
    """Solution ``y`` of ``x1 @ y = x2`` (``x2`` of shape ``(M,)`` is one vector).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.linalg.solve(ha.asarray([[2.0, 0.0], [0.0, 4.0]]), ha.asarray([2.0, 2.0]))
    HostPtrArray([1. , 0.5], dtype=float64)
    """
    a, b = _float(host(x1)), _float(host(x2))
    return result(npl.solve(a, b), result_device(x1, x2))


def svd(x: HostPtrArray, /, *, full_matrices: bool = True) -> SVDResult:
    """Singular value decomposition ``x = U @ diag(S) @ Vh`` of each matrix in ``x``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.linalg.svd(ha.asarray([[3.0, 0.0], [0.0, 4.0]])).S
    HostPtrArray([4., 3.], dtype=float64)
    """
    u, s, vh = npl.svd(_float(host(x)), full_matrices=full_matrices)
    d = dev_of(x)
    return SVDResult(result(u, d), result(s, d), result(vh, d))


def svdvals(x: HostPtrArray, /) -> HostPtrArray:
    """Singular values of each matrix in ``x``, descending.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.linalg.svdvals(ha.asarray([[3.0, 0.0], [0.0, 4.0]]))
    HostPtrArray([4., 3.], dtype=float64)
    """
    return result(npl.svdvals(_float(host(x))), dev_of(x))


def trace(x: HostPtrArray, /, *, offset: int = 0, dtype: Any = None) -> HostPtrArray:
    """Sum of the ``offset`` diagonal of each matrix in ``x`` (integers accumulate in the
    default integer type unless ``dtype`` says otherwise).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.linalg.trace(ha.asarray([[1, 2], [3, 4]]))
    HostPtrArray(5, dtype=int64)
    """
    return result(npl.trace(host(x), offset=offset, dtype=dtype), dev_of(x))


def vector_norm(x: HostPtrArray, /, *, axis: int | tuple[int, ...] | None = None,
                keepdims: bool = False, ord: int | float = 2) -> HostPtrArray:  # noqa: A002
    """Vector norm of ``x`` along ``axis`` (all elements if None); ``ord`` may be any
    real number or +-inf.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.linalg.vector_norm(ha.asarray([3.0, 4.0]))
    HostPtrArray(5., dtype=float64)
    """
    if device_newest(x) and (axis is None or isinstance(axis, (int, tuple))):
        # (other axis values: numpy's error, from the host path)
        r = try_device("vector_norm", (x,), axis=axis, keepdims=keepdims, ord=ord)
        if r is not None:
            return r
    a = _float(host(x))
    r = npl.vector_norm(a, axis=axis, keepdims=keepdims, ord=ord)  # type: ignore[arg-type]
    real = np.finfo(a.dtype).dtype  # the norm of a complex array is real, same precision
    return result(np.asarray(r).astype(real, copy=False), dev_of(x))
