"""Coherence state of one host allocation: who holds the newest bytes.

Pure bookkeeping, no OpenCL: this module can be read and tested alone.
Each side -- the host and every device with a buffer over the allocation --
has a version number; a write on a side makes that side's version
``latest + 1``; a side is *current* when its version equals ``latest``.

The methods come in two kinds.  ``plan_*``/``source_*``/``hazards_*`` say
what must happen before an access (which device to acquire from, whether
to publish, which in-flight launches to wait for); the past-tense methods
(``acquired``, ``published``, ``host_written``, ``device_written`` ...)
record that it happened.  The caller (:mod:`hostarray._storage`) performs
the transfers and holds the lock.

Device keys and launch tokens are opaque: any hashable for a key, any
object for a token.  One rule is assumed of every backend: an acquire from
a device completes every launch previously issued on that device (an
in-order queue).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

__all__ = ["Coherence"]

_NEVER = -1  # version of a device buffer that has never received data


class Coherence:
    """Versions per side and in-flight launches of one allocation.

    Examples
    --------
    >>> from hostarray._coherence import Coherence
    >>> c = Coherence()
    >>> c.add_device("gpu")
    >>> c.plan_device_read("gpu")  # (acquire from, publish?)
    (None, True)
    >>> c.published("gpu"); c.device_written("gpu", token="launch-1")
    >>> c.host_stale, c.source_for_host()
    (True, 'gpu')
    """

    __slots__ = ("latest", "host", "devices", "inflight", "escapes", "deferred_ends",
                 "host_stale", "host_exclusive")

    def __init__(self) -> None:
        self.latest = 0
        self.host = 0
        self.devices: dict[Hashable, int] = {}
        # (token, device key, writes?) for every launch not yet known finished
        self.inflight: list[tuple[Any, Hashable, bool]] = []
        self.escapes = 0
        self.deferred_ends = 0  # escapes that ended while another thread held the lock
        self.host_stale = False
        self.host_exclusive = True

    # -- derived flags: the O(1) fast path of every host access ----------
    def _refresh(self) -> None:
        latest = self.latest
        self.host_stale = self.host != latest
        self.host_exclusive = (not self.host_stale and not self.inflight
                               and all(v != latest for v in self.devices.values()))

    def current_devices(self) -> list[Hashable]:
        """Devices whose copy holds the newest data."""
        return [k for k, v in self.devices.items() if v == self.latest]

    # -- devices -------------------------------------------------------------
    def add_device(self, key: Hashable) -> None:
        """A buffer was created on ``key``; it holds nothing yet."""
        self.devices.setdefault(key, _NEVER)
        self._refresh()

    def must_acquire_before_forget(self, key: Hashable) -> bool:
        """Whether freeing ``key``'s buffer would lose the newest data."""
        return self.devices.get(key) == self.latest and self.host != self.latest

    def forget_device(self, key: Hashable) -> None:
        """``key``'s buffer is gone (its launches were waited for)."""
        self.devices.pop(key, None)
        self.inflight = [t for t in self.inflight if t[1] != key]
        self._refresh()

    # -- host reads ------------------------------------------------------------
    def source_for_host(self) -> Hashable | None:
        """A current device to acquire from, or ``None`` if the host is current."""
        if not self.host_stale:
            return None
        for k, v in self.devices.items():
            if v == self.latest:
                return k
        raise AssertionError("coherence: no side holds the newest data")

    def launches_on(self, key: Hashable) -> list[Any]:
        """Tokens of ``key``'s launches (and transfers) not yet known finished."""
        return [t[0] for t in self.inflight if t[1] == key]

    def is_current(self, key: Hashable) -> bool:
        """Whether ``key``'s copy holds the newest data."""
        return self.devices.get(key, _NEVER) == self.latest

    def acquired(self, key: Hashable) -> None:
        """The host now holds ``key``'s data; ``key``'s launches are finished."""
        self.host = self.devices[key]
        self.inflight = [t for t in self.inflight if t[1] != key]
        self._refresh()

    # -- host writes -------------------------------------------------------------
    def hazards_for_host_write(self) -> list[Any]:
        """Launches to wait for before the host may write (read or write them)."""
        return [t[0] for t in self.inflight]

    def host_written(self) -> None:
        """The host writes (its hazards were waited for, stale data acquired)."""
        self.inflight.clear()
        self.latest += 1
        self.host = self.latest
        self._refresh()

    def host_write_failed(self, skipped_acquire: bool) -> None:
        """A host write raised part-way.

        If the acquire was skipped (a whole overwrite), the host's bytes were
        never current: the devices keep the newest data, nothing is recorded.
        Otherwise the host may hold part of the write: it becomes the newest.
        """
        if not skipped_acquire:
            self.host_written()

    # -- raw exports ----------------------------------------------------------------
    def escape_begins(self) -> None:
        """A raw numpy view was handed out: the host may write at any time."""
        self.escapes += 1
        self.host_written()

    def escape_ends(self) -> None:
        """The last reference to a raw view died; it may have written."""
        self.escapes -= 1
        self.host_may_have_written()

    def host_may_have_written(self) -> None:
        """A raw view may have written: devices are stale, launches stay tracked."""
        if not self.host_stale:
            self.latest += 1
            self.host = self.latest
            self._refresh()

    @property
    def escaped(self) -> bool:
        """Whether raw views that may write behind our back are alive."""
        return self.escapes > 0

    # -- device reads and writes ---------------------------------------------------
    def plan_device_read(self, key: Hashable) -> tuple[Hashable | None, bool]:
        """``(acquire_from, publish)`` needed before a launch on ``key`` reads."""
        if self.devices.get(key, _NEVER) == self.latest:
            return None, False
        return self.source_for_host(), True

    def hazards_for_device_write(self, key: Hashable) -> list[Any]:
        """Launches on *other* devices to wait for before a launch on ``key`` writes.

        ``key``'s own queue is in order; another device's queue is not ordered
        against it, so its launches that read (or write) the data must be done."""
        return [t[0] for t in self.inflight if t[1] != key]

    def device_invalidated(self, key: Hashable) -> None:
        """``key``'s copy may hold bytes nobody asked for (raw work that raised):
        it holds no version until the next publish.  Its launches were waited for."""
        if key in self.devices and not (self.devices[key] == self.latest
                                        and self.host_stale):
            self.devices[key] = _NEVER
        self.inflight = [t for t in self.inflight if t[1] != key]
        self._refresh()

    def published(self, key: Hashable, token: Any = None) -> None:
        """The host's data was made visible on ``key``.

        ``token`` is the transfer still reading host memory, if any: a host
        write must wait for it like for a launch that reads.
        """
        if self.host_stale:
            raise AssertionError("coherence: publish from a stale host")
        self.devices[key] = self.host
        if token is not None:
            self.inflight.append((token, key, False))
        self._refresh()

    def device_read_launched(self, key: Hashable, token: Any) -> None:
        """A launch on ``key`` reads the data (write-after-read hazard)."""
        self.inflight.append((token, key, False))
        self._refresh()

    def device_written(self, key: Hashable, token: Any) -> None:
        """A launch on ``key`` writes: ``key`` becomes the only current side."""
        self.latest += 1
        self.devices[key] = self.latest
        self.inflight.append((token, key, True))
        self._refresh()

    def drop_launches(self, tokens: list[Any]) -> None:
        """Forget ``tokens`` (launches that failed: reported once, not waited for again)."""
        self.inflight = [t for t in self.inflight if all(t[0] is not d for d in tokens)]
        self._refresh()

    def __repr__(self) -> str:
        devs = ", ".join(f"{k}={v}" for k, v in self.devices.items())
        return (f"Coherence(latest={self.latest}, host={self.host}, {devs or 'no devices'}, "
                f"inflight={len(self.inflight)}, escapes={self.escapes})")
