"""Every ``HOSTARRAY_*`` environment variable hostarray reads, parsed and checked here.

One function per variable reads it and returns its value (or raises the one
``ValueError`` that says what is wrong with it, starting with ``NAME='value':``);
one :class:`Setting` record per variable says what it sets, the values it takes,
what unset means and when hostarray reads it; :func:`check` lists what is wrong
with every variable set here (``hostarray devices``, ``demo`` and ``bench`` print
it and exit 2; ``hostarray config`` reports it).  The model is array-api-strict's
``_flags.py``; ``docs/install.md`` has :func:`markdown_table` as its table of the
variables.

Pure: this module imports the standard library alone (the bench's size parser at
the call that needs it), so that every module of hostarray can import it.  The
modules that use a variable read it through these functions, at the time its
record's ``read`` says; ``HOSTARRAY_DEVICE`` is parsed here but resolved by
:mod:`hostarray._devices` (a name is only known to be a device once the drivers
were asked), so :func:`check` can't say that it names no device here.

Examples
--------
>>> from hostarray import _settings
>>> _settings.link({"HOSTARRAY_LINK": " Copied "}), _settings.link({})
('copied', None)
>>> _settings.check({"HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES": "lots"})
["HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES='lots': give a number of bytes (0: every size) or 'off'"]
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Setting", "SETTINGS", "BY_NAME", "DEVICE", "LINK", "TRANSFER_GUARD",
           "DEVICE_COMPUTE_MIN_BYTES", "BENCH_HOST_MEM", "DASK_DEVICE", "LINK_KINDS",
           "TRANSFER_GUARD_MODES", "DEVICE_COMPUTE_MIN_BYTES_DEFAULT", "MATMUL_TUNE",
           "MATMUL_TUNE_MODES", "device", "link", "transfer_guard", "device_compute_min_bytes",
           "bench_host_mem", "dask_device", "matmul_tune", "PROGRAM_CACHE", "program_cache",
           "cache_dir", "check", "markdown_table"]

Environ = Mapping[str, str]

#: the host-link kinds ``HOSTARRAY_LINK`` may force (``auto``: none forced)
LINK_KINDS = ("shared", "mapped", "copied")
#: the transfer guard's modes
TRANSFER_GUARD_MODES = ("allow", "log", "disallow")
#: ``HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES`` unset: below 1 MiB a launch costs more than
#: numpy's work plus the acquire
DEVICE_COMPUTE_MIN_BYTES_DEFAULT = 1 << 20
#: what ``HOSTARRAY_MATMUL_TUNE`` may say
MATMUL_TUNE_MODES = ("auto", "off", "reset")


def _raw(name: str, environ: Environ | None) -> str:
    return (os.environ if environ is None else environ).get(name, "")


# -- one function per variable -------------------------------------------------------------------

def device(environ: Environ | None = None) -> str | None:
    """The device name ``HOSTARRAY_DEVICE`` gives (stripped), ``None`` where it is unset
    or empty (then the host is the default device).  :mod:`hostarray._devices` resolves
    it at the first use of the default device.

    Examples
    --------
    >>> from hostarray._settings import device
    >>> device({"HOSTARRAY_DEVICE": " opencl:0:0 "}), device({"HOSTARRAY_DEVICE": " "})
    ('opencl:0:0', None)
    """
    return _raw("HOSTARRAY_DEVICE", environ).strip() or None


def link(environ: Environ | None = None, *, checked: bool = True) -> str | None:
    """The host-link kind ``HOSTARRAY_LINK`` forces on new device buffers: ``shared``,
    ``mapped`` or ``copied`` (case and spaces ignored); ``None`` for unset, empty or
    ``auto`` (a probe kernel finds each device's own).

    ``checked=False`` returns a value that names no kind as given (lowercased), for a
    report that still shows it.

    Raises
    ------
    ValueError
        ``HOSTARRAY_LINK`` names no link kind (``HOSTARRAY_LINK='sideways': use one of
        auto, shared, mapped, copied``).
    """
    forced = _raw("HOSTARRAY_LINK", environ).strip().lower()
    if not forced or forced == "auto":
        return None
    if checked and forced not in LINK_KINDS:
        raise ValueError(f"HOSTARRAY_LINK={forced!r}: use one of auto, {', '.join(LINK_KINDS)}")
    return forced


def transfer_guard(environ: Environ | None = None, *, checked: bool = True) -> str:
    """The transfer guard's process default ``HOSTARRAY_TRANSFER_GUARD`` names: ``allow``,
    ``log`` or ``disallow`` (case and spaces ignored; unset or empty: ``allow``).

    ``checked=False`` returns a value that names no mode as given (lowercased): the
    guard keeps it from import on and refuses it at the first implicit transfer
    (``HOSTARRAY_TRANSFER_GUARD='sideways': use one of allow, log, disallow``).

    Raises
    ------
    ValueError
        It names no mode (``HOSTARRAY_TRANSFER_GUARD='sideways': use one of 'allow',
        'log', 'disallow'``).
    """
    mode = _raw("HOSTARRAY_TRANSFER_GUARD", environ).strip().lower() or "allow"
    if checked and mode not in TRANSFER_GUARD_MODES:
        raise ValueError(f"HOSTARRAY_TRANSFER_GUARD={mode!r}: use one of 'allow', 'log', "
                         f"'disallow'")
    return mode


def device_compute_min_bytes(environ: Environ | None = None) -> int | None:
    """The device-compute threshold ``HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES`` sets: a number
    of bytes (``0``: every size), ``None`` for ``off`` (also ``none``, ``never``: nothing
    computes on a device); unset or empty: :data:`DEVICE_COMPUTE_MIN_BYTES_DEFAULT`.

    Raises
    ------
    ValueError
        Not a number of bytes >= 0 nor ``off``.

    Examples
    --------
    >>> from hostarray._settings import device_compute_min_bytes as threshold
    >>> threshold({}), threshold({"HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES": "OFF"})
    (1048576, None)
    """
    name = "HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES"
    given = _raw(name, environ)
    v = given.strip().lower()
    if not v:
        return DEVICE_COMPUTE_MIN_BYTES_DEFAULT
    if v in ("off", "none", "never"):
        return None
    try:
        n = int(v)
    except ValueError:
        raise ValueError(f"{name}={given!r}: give a number of bytes (0: every size) or "
                         f"'off'") from None
    if n < 0:
        raise ValueError(f"{name}={given!r}: the threshold must be >= 0 bytes (or 'off')")
    return n


def bench_host_mem(environ: Environ | None = None) -> int:
    """The host memory ``hostarray bench`` may count as free, ``HOSTARRAY_BENCH_HOST_MEM``
    in bytes (a size as ``--max-size`` takes it: ``16GiB``, ``1.5GB``, ``4096``); ``0``
    where unset or empty (then the system's own figure).

    Raises
    ------
    ValueError
        Not a size (``hostarray.bench.parse_size`` says why).
    """
    from ._bench_report import parse_size  # (itself pure: the standard library alone)

    given = _raw("HOSTARRAY_BENCH_HOST_MEM", environ)
    try:
        return parse_size(given or "0")
    except ValueError as e:
        raise ValueError(f"HOSTARRAY_BENCH_HOST_MEM={given!r}: {e}") from None


def dask_device(environ: Environ | None = None) -> dict[str, Any]:
    """What ``HOSTARRAY_DASK_DEVICE`` holds: a JSON object that
    :class:`hostarray.dask.LocalDeviceCluster` sets for each worker (the device the
    client saw, which the worker checks); ``{}`` where unset or empty (not such a worker).

    Raises
    ------
    ValueError
        Not a JSON object.
    """
    given = _raw("HOSTARRAY_DASK_DEVICE", environ)
    try:
        value = json.loads(given or "{}")
    except ValueError as e:
        raise ValueError(f"HOSTARRAY_DASK_DEVICE={given!r}: not JSON ({e}); hostarray.dask "
                         f"sets it for its workers, leave it unset") from None
    if not isinstance(value, dict):
        raise ValueError(f"HOSTARRAY_DASK_DEVICE={given!r}: not a JSON object; "
                         f"hostarray.dask sets it for its workers, leave it unset")
    return value


def matmul_tune(environ: Environ | None = None) -> str:
    """What ``HOSTARRAY_MATMUL_TUNE`` says of the device matmul's tile tuning
    (:mod:`hostarray._compute.matmul_tune`): ``auto`` (unset or empty: a device's first large
    float32 product tunes it, the winners cached in the user's cache folder), ``off`` (no
    tuning, the cache not read: built-in tiles) or ``reset`` (each device's cached tuning is
    dropped at its first product, which tunes anew); case and spaces ignored.

    Raises
    ------
    ValueError
        Another value (``HOSTARRAY_MATMUL_TUNE='later': use one of auto, off, reset``).

    Examples
    --------
    >>> from hostarray._settings import matmul_tune
    >>> matmul_tune({}), matmul_tune({"HOSTARRAY_MATMUL_TUNE": " OFF "})
    ('auto', 'off')
    """
    given = _raw("HOSTARRAY_MATMUL_TUNE", environ)
    mode = given.strip().lower() or "auto"
    if mode not in MATMUL_TUNE_MODES:
        raise ValueError(f"HOSTARRAY_MATMUL_TUNE={given!r}: use one of "
                         f"{', '.join(MATMUL_TUNE_MODES)}")
    return mode


def cache_dir(environ: Environ | None = None) -> str:
    """hostarray's folder in the user's cache: ``$XDG_CACHE_HOME/hostarray`` where that is an
    absolute path, else ``~/.cache/hostarray`` (the matmul tuning's cache and the built
    programs live there).

    Examples
    --------
    >>> from hostarray._settings import cache_dir
    >>> cache_dir({"XDG_CACHE_HOME": "/tmp/c"})
    '/tmp/c/hostarray'
    """
    root = _raw("XDG_CACHE_HOME", environ)
    if not os.path.isabs(root):  # the XDG spec: a relative value is ignored
        root = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "hostarray")


_OFF = ("off", "0", "false", "no", "none")


def program_cache(environ: Environ | None = None) -> str | None:
    """The folder ``HOSTARRAY_PROGRAM_CACHE`` names for the binaries of built OpenCL
    programs (:mod:`hostarray.backends._binaries`), ``None`` where it says ``off`` (or
    ``0``, ``false``, ``no``, ``none``: not folder names anyone means); unset or
    empty: ``programs`` in :func:`cache_dir`.  ``~`` is expanded; a relative path is taken
    from the working folder at the time of the build.

    Examples
    --------
    >>> from hostarray._settings import program_cache
    >>> program_cache({"XDG_CACHE_HOME": "/tmp/c"})
    '/tmp/c/hostarray/programs'
    >>> program_cache({"HOSTARRAY_PROGRAM_CACHE": " Off "}) is None
    True
    """
    given = _raw("HOSTARRAY_PROGRAM_CACHE", environ).strip()
    if given.lower() in _OFF:
        return None
    if not given:
        return os.path.join(cache_dir(environ), "programs")
    return os.path.abspath(os.path.expanduser(given))


# -- one record per variable ---------------------------------------------------------------------

@dataclass(frozen=True)
class Setting:
    """One environment variable hostarray reads.

    Attributes
    ----------
    name : str
        ``HOSTARRAY_...``.
    sets : str
        What it sets.
    values : str
        The values it takes.
    unset : str
        What unset (or empty, the same for every variable) means: the default.
    read : str
        When hostarray reads it (a wrong value is refused then).
    see : str
        The documentation page that says more.
    parse : callable
        ``parse(environ)``: its value (``environ`` ``None``: ``os.environ``); raises the
        ``ValueError`` that says what is wrong with it.
    """

    name: str
    sets: str
    values: str
    unset: str
    read: str
    see: str
    parse: Callable[[Environ | None], Any]

    def raw(self, environ: Environ | None = None) -> str | None:
        """The value as set (``None``: unset)."""
        return (os.environ if environ is None else environ).get(self.name)

    def value(self, environ: Environ | None = None) -> Any:
        """:attr:`parse`'s value."""
        return self.parse(environ)

    def problem(self, environ: Environ | None = None) -> str | None:
        """What is wrong with the value (one sentence, starting ``NAME='value':``), or
        ``None``."""
        try:
            self.parse(environ)
        except ValueError as e:
            return str(e)
        return None


SETTINGS: tuple[Setting, ...] = (
    Setting("HOSTARRAY_DEVICE", "the default device of new arrays",
            "a device name: cpu, opencl, opencl:P:D, or a kind (gpu, opencl:cpu:0, ...)",
            "the host, cpu",
            "at the first use of the default device; a name of no device here is refused "
            "then, the message starting HOSTARRAY_DEVICE='...'", "gpu", device),
    Setting("HOSTARRAY_LINK", "forces the host-link kind of new device buffers",
            f"auto, {', '.join(LINK_KINDS)}", "auto: a probe kernel finds it",
            "at each device's first use", "hostptr", link),
    Setting("HOSTARRAY_TRANSFER_GUARD", "the transfer guard's process default",
            ", ".join(TRANSFER_GUARD_MODES), "allow",
            "when hostarray is imported; a wrong value is refused at the first implicit "
            "transfer", "coherence", transfer_guard),
    Setting("HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES", "the smallest operation computed on a device",
            "a number of bytes (0: every size), or off", "1 MiB", "at its first use",
            "device-compute", device_compute_min_bytes),
    Setting("HOSTARRAY_BENCH_HOST_MEM", "the host memory hostarray bench may count as free",
            "a size: 16GiB, 1.5GB, 4096", "what the system reports", "by hostarray bench",
            "cli", bench_host_mem),
    Setting("HOSTARRAY_DASK_DEVICE",
            "set by hostarray.dask for its workers: the device the client saw, checked by "
            "each worker", "a JSON object (hostarray.dask's)", "not a dask worker",
            "by hostarray.dask in a worker", "interop", dask_device),
    Setting("HOSTARRAY_MATMUL_TUNE",
            "the device matmul's tile tuning (cached per device in "
            "~/.cache/hostarray/matmul-tuning.json)", ", ".join(MATMUL_TUNE_MODES),
            "auto: a device's first large float32 product tunes it",
            "at each device's first product; reset drops its cached tuning then",
            "device-compute", matmul_tune),
    Setting("HOSTARRAY_PROGRAM_CACHE",
            "the folder of built OpenCL programs' binaries, so that a later process loads a "
            "program instead of compiling it", "a folder (relative: to the working folder), "
            "or off",
            "~/.cache/hostarray/programs ($XDG_CACHE_HOME/hostarray/programs)",
            "at each build of a program the process has not built yet", "kernels",
            program_cache),
)
"""Every variable hostarray reads, in the order reports list them."""

(DEVICE, LINK, TRANSFER_GUARD, DEVICE_COMPUTE_MIN_BYTES, BENCH_HOST_MEM, DASK_DEVICE,
 MATMUL_TUNE, PROGRAM_CACHE) = SETTINGS

BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}


def check(environ: Environ | None = None, *, skip: Iterable[str] = ()) -> list[str]:
    """What is wrong with the variables set here (``environ``: ``os.environ``), one
    sentence each, in :data:`SETTINGS` order; empty where nothing is.

    ``skip`` names variables not to check (said elsewhere).  A ``HOSTARRAY_DEVICE``
    naming no device here is not found here: resolving a name needs the drivers
    (``hostarray devices`` says it on its ``default:`` line).

    Examples
    --------
    >>> from hostarray._settings import check
    >>> check({"HOSTARRAY_LINK": "sideways", "HOSTARRAY_TRANSFER_GUARD": "log"})
    ["HOSTARRAY_LINK='sideways': use one of auto, shared, mapped, copied"]
    """
    skipped = set(skip)
    return [p for s in SETTINGS if s.name not in skipped
            for p in (s.problem(environ),) if p is not None]


def markdown_table() -> str:
    """The table of :data:`SETTINGS` that ``docs/install.md`` holds (a test checks it)."""
    rows = ["| variable | sets | values | unset or empty | read | see |",
            "|---|---|---|---|---|---|"]
    for s in SETTINGS:
        rows.append(f"| `{s.name}` | {s.sets} | {s.values} | {s.unset} | {s.read} | "
                    f"{{doc}}`{s.see}` |")
    return "\n".join(rows)
