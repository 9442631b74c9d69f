"""What hostarray knows about an array's bytes, read without changing anything: for tests.

:func:`state` returns one :class:`State` record per array (the coherence state of its
storage, and of the bytes the array covers): a test reads ``state(x).host_stale`` or
``state(x).host_current`` instead of the storage's internals (``x._s.coh``), so that the
internals may change under the tests.  Nothing here moves bytes, waits or takes part in
the coherence rules (:mod:`hostarray._coherence` holds those).

Examples
--------
>>> import hostarray as ha
>>> from hostarray._introspect import state
>>> s = state(ha.zeros(4))
>>> s.host_current, s.host_stale, s.devices, s.segments
(True, False, {}, ((0, 32, ('host',)),))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._coherence import HOST

__all__ = ["State", "state", "host_current"]


@dataclass(frozen=True)
class State:
    """The coherence state of an array (see :func:`state`); compares equal field by field.

    Byte ranges are ``(lo, hi)`` in the storage's allocation (the bytes of every array
    sharing it); sides are named ``"host"`` or by their device's name (``"opencl:0:0"``).

    Attributes
    ----------
    host_stale, host_exclusive : bool
        The storage's fast-path flags: a host read must ask first (some byte's newest
        value is not on the host, or a failed launch is still to be reported); a host
        write need not ask (the host holds every byte alone, nothing in flight).
    host_current : bool
        The host holds the newest value of every byte the array covers.
    devices : dict
        Each device with a buffer over the storage -> whether it holds the newest value of
        every byte the array covers.
    stale : tuple of (lo, hi)
        The ranges of the array's bytes whose newest value is not on the host.
    segments : tuple of (lo, hi, sides)
        Every byte range of the allocation with the sides holding its newest value
        (sorted names).
    inflight : tuple of (device, lo, hi)
        Launches and transfers not yet known finished, with the bytes they use.
    escapes : tuple of (lo, hi)
        The ranges raw views (which may write unseen) cover, one per view.
    raw_blocks : tuple of (device, lo, hi)
        Open ``hostptr.cl_buffer`` blocks that may write.
    unreported : int
        Failed launches still to be raised at the next host accesses.
    """

    host_stale: bool
    host_exclusive: bool
    host_current: bool
    devices: dict[str, bool]
    stale: tuple[tuple[int, int], ...]
    segments: tuple[tuple[int, int, tuple[str, ...]], ...]
    inflight: tuple[tuple[str, int, int], ...]
    escapes: tuple[tuple[int, int], ...]
    raw_blocks: tuple[tuple[str, int, int], ...]
    unreported: int

    @property
    def escaped(self) -> bool:
        """Whether raw views that may write unseen are alive."""
        return bool(self.escapes)


def _name(side: Any) -> str:
    return "host" if side is HOST else str(side)


def _range(x: Any) -> tuple[int, int]:
    _, lo, hi = x._bytes()
    return lo, hi


def state(x: Any) -> State:
    """The coherence state of ``x`` (a :class:`~hostarray.HostPtrArray`), as one record.

    Examples
    --------
    >>> import hostarray as ha
    >>> from hostarray._introspect import state
    >>> x = ha.arange(8.0)
    >>> state(x).stale, state(x[2:4]).host_current
    ((), True)
    """
    s = x._s
    lo, hi = _range(x)
    coh = s.coh
    if coh is None:  # no device buffer, no escape yet: the host holds everything alone
        return State(bool(s.host_stale), bool(s.host_exclusive), True, {}, (),
                     ((0, s.nbytes, ("host",)),) if s.nbytes else (), (), (), (), 0)
    with s.lock:  # one consistent picture while other threads work on the array
        return _state(s, coh, lo, hi)


def _state(s: Any, coh: Any, lo: int, hi: int) -> State:
    parts = coh.validity(lo, hi)
    return State(
        host_stale=bool(s.host_stale), host_exclusive=bool(s.host_exclusive),
        host_current=all(HOST in v for _, _, v in parts),
        devices={_name(k): all(k in v for _, _, v in parts) for k in coh.devices},
        stale=tuple((a, b) for a, b, v in parts if HOST not in v),
        segments=tuple((a, b, tuple(sorted(map(_name, v)))) for a, b, v in coh.validity()),
        inflight=tuple((_name(k), a, b) for _, k, a, b in coh.inflight),
        escapes=tuple(coh.escapes),
        raw_blocks=tuple((_name(k), a, b) for k, a, b in coh.raw_blocks),
        unreported=len(coh.unreported))


def host_current(x: Any, lo: int | None = None, hi: int | None = None) -> bool:
    """Whether the host holds the newest value of the bytes ``[lo, hi)`` of ``x``'s
    allocation (default: the bytes ``x`` covers).

    Examples
    --------
    >>> import hostarray as ha
    >>> from hostarray._introspect import host_current
    >>> host_current(ha.zeros(4), 0, 8)
    True
    """
    if lo is None or hi is None:
        a, b = _range(x)
        lo, hi = (a if lo is None else lo), (b if hi is None else hi)
    coh = x._s.coh
    if coh is None:
        return True
    with x._s.lock:
        return coh.is_host_current(lo, hi)
