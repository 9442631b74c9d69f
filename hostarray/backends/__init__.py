"""Backends ("frameworks"): how device buffers over host memory are made and synced.

A backend provides a *runtime* per device and *buffers* created over a
:class:`~hostarray._storage.Storage`'s bytes.  The storage and the coherence
layer only use the :class:`DeviceBuffer` protocol below; OpenCL is the first
backend (:mod:`hostarray.backends.opencl`).
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["DeviceBuffer", "Token"]


class Token(Protocol):
    """Something in flight on a device (a launch or a transfer)."""

    def wait(self) -> None: ...


class DeviceBuffer(Protocol):
    """A device's view of one host allocation."""

    link: str  # "shared", "mapped" or "copied"
    nbytes: int

    def publish(self, lo: int = 0, hi: int | None = None) -> tuple[Token | None, int]:
        """Make the host bytes ``[lo, hi)`` (all by default) visible to launches enqueued
        afterwards.

        Returns the transfer still reading host memory (or ``None``) and the
        number of bytes really moved."""
        ...

    def acquire(self, lo: int = 0, hi: int | None = None) -> int:
        """Block until every launch on the device is done and the host holds its
        writes to bytes ``[lo, hi)`` (all by default); return the bytes really moved."""
        ...

    def release(self) -> None:
        """Give the device memory back."""
        ...

    def handle(self, offset: int, nbytes: int, raw: bool = False) -> Any:
        """The backend object a launch passes for ``nbytes`` at ``offset`` (``raw``: for a
        ``hostptr.cl_buffer`` block, held until :meth:`raw_done`)."""
        ...

    def held_overlap(self, offset: int, nbytes: int) -> tuple[int, int] | None:
        """The range of an object an open ``cl_buffer`` block holds that :meth:`handle`
        for ``nbytes`` at ``offset`` would have to let go of, or ``None``."""
        ...

    def raw_done(self, offset: int, nbytes: int, event: Any) -> None:
        """The ``cl_buffer`` block holding :meth:`handle`'s object for ``nbytes`` at
        ``offset`` ended; ``event`` follows its commands."""
        ...

    def used(self, offset: int, nbytes: int, event: Any) -> None:
        """``event`` is the newest command that uses :meth:`handle`'s object for ``nbytes``
        at ``offset`` (the OpenCL backend waits for it before retiring a sub-buffer)."""
        ...
