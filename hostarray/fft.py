"""The array API standard's ``fft`` extension, computed on the host by numpy.

Results keep the input's precision (``float32``/``complex64`` in gives
``complex64`` out) and go on the input's device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from ._api._common import dev_of, host, result
from ._array import HostPtrArray
from ._placement import requested_device

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

Norm = Literal["backward", "ortho", "forward"]
_COMPLEX = {np.dtype(np.float32): np.dtype(np.complex64),
            np.dtype(np.complex64): np.dtype(np.complex64)}


def _complex_of(dt: np.dtype) -> np.dtype:
    return _COMPLEX.get(dt, np.dtype(np.complex128))


def _real_of(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dt in _COMPLEX else np.dtype(np.float64)


def _c2c(fn: Any, x: HostPtrArray, **kw: Any) -> HostPtrArray:
    a = host(x)
    return result(fn(a, **kw).astype(_complex_of(a.dtype), copy=False), dev_of(x))


def _c2r(fn: Any, x: HostPtrArray, **kw: Any) -> HostPtrArray:
    a = host(x)
    return result(fn(a, **kw).astype(_real_of(a.dtype), copy=False), dev_of(x))


def fft(x: HostPtrArray, /, *, n: int | None = None, axis: int = -1,
        norm: Norm = "backward") -> HostPtrArray:
    """One-dimensional discrete Fourier transform along ``axis``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.fft.fft(ha.asarray([1.0, 1.0]))
    HostPtrArray([2.+0.j, 0.+0.j], dtype=complex128)
    """
    return _c2c(np.fft.fft, x, n=n, axis=axis, norm=norm)


def ifft(x: HostPtrArray, /, *, n: int | None = None, axis: int = -1,
         norm: Norm = "backward") -> HostPtrArray:
    """One-dimensional inverse discrete Fourier transform along ``axis``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.fft.ifft(ha.asarray([2.0, 0.0]))
    HostPtrArray([1.+0.j, 1.+0.j], dtype=complex128)
    """
    return _c2c(np.fft.ifft, x, n=n, axis=axis, norm=norm)


def fftn(x: HostPtrArray, /, *, s: Sequence[int] | None = None,
         axes: Sequence[int] | None = None, norm: Norm = "backward") -> HostPtrArray:
    """n-dimensional discrete Fourier transform over ``axes``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.fft.fftn(ha.ones((2, 2))).shape
    (2, 2)
    """
    return _c2c(np.fft.fftn, x, s=s, axes=axes, norm=norm)


def ifftn(x: HostPtrArray, /, *, s: Sequence[int] | None = None,
          axes: Sequence[int] | None = None, norm: Norm = "backward") -> HostPtrArray:
    """n-dimensional inverse discrete Fourier transform over ``axes``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.fft.ifftn(ha.ones((2, 2))).shape
    (2, 2)
    """
    return _c2c(np.fft.ifftn, x, s=s, axes=axes, norm=norm)


def rfft(x: HostPtrArray, /, *, n: int | None = None, axis: int = -1,
         norm: Norm = "backward") -> HostPtrArray:
    """Discrete Fourier transform of real input (the non-negative frequencies).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.fft.rfft(ha.asarray([1.0, 1.0, 1.0, 1.0]))
    HostPtrArray([4.+0.j, 0.+0.j, 0.+0.j], dtype=complex128)
    """
    return _c2c(np.fft.rfft, x, n=n, axis=axis, norm=norm)


def irfft(x: HostPtrArray, /, *, n: int | None = None, axis: int = -1,
          norm: Norm = "backward") -> HostPtrArray:
    """Inverse of :func:`rfft`: a real signal of length ``n`` (default ``2 * (m - 1)``).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.fft.irfft(ha.asarray([4.0, 0.0, 0.0]))
    HostPtrArray([1., 1., 1., 1.], dtype=float64)
    """
    return _c2r(np.fft.irfft, x, n=n, axis=axis, norm=norm)


def rfftn(x: HostPtrArray, /, *, s: Sequence[int] | None = None,
          axes: Sequence[int] | None = None, norm: Norm = "backward") -> HostPtrArray:
    """n-dimensional discrete Fourier transform of real input.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.fft.rfftn(ha.ones((2, 4))).shape
    (2, 3)
    """
    return _c2c(np.fft.rfftn, x, s=s, axes=axes, norm=norm)


def irfftn(x: HostPtrArray, /, *, s: Sequence[int] | None = None,
           axes: Sequence[int] | None = None, norm: Norm = "backward") -> HostPtrArray:
    """Inverse of :func:`rfftn`.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.fft.irfftn(ha.ones((2, 3))).shape
    (2, 4)
    """
    return _c2r(np.fft.irfftn, x, s=s, axes=axes, norm=norm)


def hfft(x: HostPtrArray, /, *, n: int | None = None, axis: int = -1,
         norm: Norm = "backward") -> HostPtrArray:
    """Discrete Fourier transform of a signal with Hermitian symmetry (a real spectrum).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.fft.hfft(ha.asarray([1.0, 0.0, 0.0]))
    HostPtrArray([1., 1., 1., 1.], dtype=float64)
    """
    return _c2r(np.fft.hfft, x, n=n, axis=axis, norm=norm)


def ihfft(x: HostPtrArray, /, *, n: int | None = None, axis: int = -1,
          norm: Norm = "backward") -> HostPtrArray:
    """Inverse of :func:`hfft` for real input.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.fft.ihfft(ha.asarray([1.0, 1.0, 1.0, 1.0]))
    HostPtrArray([1.-0.j, 0.-0.j, 0.-0.j], dtype=complex128)
    """
    return _c2c(np.fft.ihfft, x, n=n, axis=axis, norm=norm)


def _freq_dtype(dtype: Any) -> np.dtype:
    """The frequencies' data type: float64 by default; the standard allows a real
    floating-point one only."""
    dt = np.dtype(np.float64 if dtype is None else dtype)
    if dt.kind != "f":
        raise ValueError(f"the frequencies' dtype must be a real floating-point data type, "
                         f"not {dt}")
    return dt


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None,
            device: Any = None) -> HostPtrArray:
    """Sample frequencies of :func:`fft` for a signal of ``n`` samples spaced ``d``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.fft.fftfreq(4)
    HostPtrArray([ 0.  ,  0.25, -0.5 , -0.25], dtype=float64)
    """
    return result(np.fft.fftfreq(n, d=d).astype(_freq_dtype(dtype), copy=False),
                  requested_device(device))


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None,
             device: Any = None) -> HostPtrArray:
    """Sample frequencies of :func:`rfft` for a signal of ``n`` samples spaced ``d``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.fft.rfftfreq(4)
    HostPtrArray([0.  , 0.25, 0.5 ], dtype=float64)
    """
    return result(np.fft.rfftfreq(n, d=d).astype(_freq_dtype(dtype), copy=False),
                  requested_device(device))


def fftshift(x: HostPtrArray, /, *, axes: int | Sequence[int] | None = None) -> HostPtrArray:
    """``x`` with the zero-frequency component moved to the centre.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.fft.fftshift(ha.asarray([0, 1, 2, -2, -1]))
    HostPtrArray([-2, -1,  0,  1,  2], dtype=int64)
    """
    return result(np.fft.fftshift(host(x), axes=axes), dev_of(x))


def ifftshift(x: HostPtrArray, /, *, axes: int | Sequence[int] | None = None) -> HostPtrArray:
    """Inverse of :func:`fftshift`.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.fft.ifftshift(ha.asarray([-2, -1, 0, 1, 2]))
    HostPtrArray([ 0,  1,  2, -2, -1], dtype=int64)
    """
    return result(np.fft.ifftshift(host(x), axes=axes), dev_of(x))


