"""Process-wide counters of every synchronisation hostarray performs.

Tests and benchmarks assert laziness through these counters instead of
guessing it from timings.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

__all__ = ["Stats", "stats", "reset_stats"]


@dataclass(frozen=True)
class Stats:
    """A snapshot of hostarray's transfer counters.

    Attributes
    ----------
    publishes : int
        Host writes made visible to a device (counted on every link kind,
        also on a shared link where no byte moves).
    acquires : int
        Device writes made visible to the host (counted on every link kind).
    bytes_published : int
        Bytes really copied host -> device by publishes.
    bytes_acquired : int
        Bytes really copied device -> host by acquires.
    waits : int
        Times the host waited for in-flight launches before touching memory (or
        before retiring a sub-buffer that overlaps a new one, see docs/gpu.md).
    launches : int
        Kernel launches enqueued through hostarray.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.reset_stats()
    >>> ha.stats().publishes
    0
    """

    publishes: int = 0
    acquires: int = 0
    bytes_published: int = 0
    bytes_acquired: int = 0
    waits: int = 0
    launches: int = 0

    @property
    def bytes_moved(self) -> int:
        """Bytes really moved in either direction."""
        return self.bytes_published + self.bytes_acquired


class _Counters:
    # One lock for all counters: they are only touched when a real
    # synchronisation happens, never on the fast path of an array access.
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.value = Stats()

    def add(self, **deltas: int) -> None:
        with self.lock:
            v = self.value
            self.value = replace(v, **{k: getattr(v, k) + d for k, d in deltas.items()})


COUNTERS = _Counters()


def stats() -> Stats:
    """Return a snapshot of the transfer counters (see :class:`Stats`).

    Examples
    --------
    >>> import hostarray as ha
    >>> s = ha.stats()
    >>> s.bytes_moved >= 0
    True
    """
    return COUNTERS.value


def reset_stats() -> None:
    """Set every transfer counter back to zero.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.reset_stats()
    >>> ha.stats().acquires
    0
    """
    with COUNTERS.lock:
        COUNTERS.value = Stats()
