"""Process-wide counters of every synchronisation hostarray performs.

Tests and benchmarks assert laziness through these counters instead of
guessing it from timings.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, fields

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
        Kernel launches enqueued through hostarray (the user's and generated ones).
    device_ops : int
        Namespace functions and operators computed on a device by generated kernels
        (see :func:`~hostarray.device_compute_threshold`).
    host_fallbacks : int
        Operations the placement rule sent to a device that ran on the host instead
        (a data type or view the device path does not take; see docs/device-compute.md).
    kernels_compiled : int
        Generated kernels built (each once per operation, data types, memory layout and
        device), from their source or from the disk cache of built programs.
    kernels_loaded : int
        Of those, the ones loaded from the disk cache (``HOSTARRAY_PROGRAM_CACHE``, see
        docs/kernels.md): an earlier process built them, and no compiler ran.
    compile_seconds : float
        Time spent building them, apart from everything else.
    host_bytes_committed : int
        Host memory that device-born results (results and temporaries of the device
        compute path on a mapped or copied link) got when the host first touched it, in
        whole pages (huge pages for large arrays): their host memory costs nothing until
        the host looks, and then only the pages it reads or writes
        (see docs/device-compute.md).

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
    device_ops: int = 0
    host_fallbacks: int = 0
    kernels_compiled: int = 0
    kernels_loaded: int = 0
    compile_seconds: float = 0.0
    host_bytes_committed: int = 0

    @property
    def bytes_moved(self) -> int:
        """Bytes really moved in either direction."""
        return self.bytes_published + self.bytes_acquired


class _Counters:
    # One lock for all counters: they are only touched when a real synchronisation or a
    # launch happens, never on the fast path of an array access.  Plain ints under the
    # lock (a launch adds one; a frozen Stats rebuilt per call cost microseconds);
    # ``value`` is the snapshot.
    __slots__ = ("lock", "counts")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[str, float] = asdict(Stats())  # compile_seconds a float too

    def add(self, **deltas: float) -> None:
        with self.lock:
            counts = self.counts
            for k, d in deltas.items():
                counts[k] += d

    def launched(self, device_op: bool = False) -> None:
        """One kernel launch enqueued (``add(launches=1)``, on every launch); with
        ``device_op``, also one operation run on the device (``device_ops``)."""
        with self.lock:
            counts = self.counts
            counts["launches"] += 1
            if device_op:
                counts["device_ops"] += 1

    @property
    def value(self) -> Stats:
        with self.lock:
            return Stats(**self.counts)  # type: ignore[arg-type]  # ints, one float

    @value.setter
    def value(self, stats: Stats) -> None:
        with self.lock:
            self.counts = {k: getattr(stats, k) for k in _FIELDS}


_FIELDS = tuple(f.name for f in fields(Stats))
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
    COUNTERS.value = Stats()
