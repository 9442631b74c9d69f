"""What hostarray runs on and with: :func:`show_config` and ``hostarray config``.

One report for a bug report or a question: the versions (hostarray, Python, the
platform, numpy, pyopencl, array-api-compat and the optional packages), the
OpenCL platforms and devices (link, alignment, host alignment, double
precision, largest allocation), the devices left out and why, every
``HOSTARRAY_*`` environment variable hostarray reads (its value, or unset), and
what is in force: the default device, the transfer guard, the device-compute
threshold and the pool of device results.

Where pyopencl does not import, the report still has everything else and says
why, with the fix (:mod:`hostarray.backends._pyopencl`).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import platform
import sys
from collections.abc import Callable
from typing import Any, TextIO

from . import _settings as _environment

__all__ = ["show_config", "config_report", "format_config", "SETTINGS"]

#: Every environment variable hostarray reads: name -> what it sets, and what unset means
#: (the records of :mod:`hostarray._settings`; tests/tooling/test_cli.py checks that the package
#: names no other ``HOSTARRAY_*`` variable).
SETTINGS: dict[str, tuple[str, str]] = {s.name: (s.sets, s.unset) for s in _environment.SETTINGS}

# the optional packages, by the extra that installs them (pyproject.toml)
_OPTIONAL = {"bench": ("matplotlib",),
             "interop": ("scikit-learn", "scipy", "array-api-extra", "dask")}


def _installed(name: str) -> str | None:
    from .backends._pyopencl import _installed as installed

    return installed(name)


def _error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def _versions() -> dict[str, Any]:
    import numpy as np

    return {
        "hostarray": _version(), "hostarray_path": os.path.dirname(os.path.abspath(__file__)),
        "python": platform.python_version(), "implementation": platform.python_implementation(),
        "executable": sys.executable, "platform": platform.platform(),
        "machine": platform.machine(), "cpus": os.cpu_count(), "numpy": np.__version__,
        "pyopencl": _installed("pyopencl"), "array-api-compat": _installed("array-api-compat"),
        "optional": {name: _installed(name) for names in _OPTIONAL.values() for name in names},
    }


def _platforms() -> tuple[list[dict[str, Any]], str | None]:
    """The OpenCL platforms pyopencl lists (index, name, vendor, version, devices), and
    why there are none where the driver refused."""
    import pyopencl as cl

    try:
        found = cl.get_platforms()
    except cl.Error as e:  # no ICD at all
        return [], _error(e)
    out = []
    for i, p in enumerate(found):
        row: dict[str, Any] = {"index": i, "name": p.name.strip(), "vendor": p.vendor.strip(),
                               "version": p.version.strip()}
        try:
            row["devices"] = len(p.get_devices())
        except cl.Error as e:
            row["devices"], row["error"] = 0, _error(e)
        out.append(row)
    return out, None


def _check(fn: Callable[[], Any]) -> str | None:
    from .errors import HostPtrError

    try:
        fn()
    except (ValueError, RuntimeError, HostPtrError) as e:
        return str(e)
    return None


def _settings(opencl: bool) -> list[dict[str, Any]]:
    from ._devices import _environment_default

    # each variable's own check (hostarray._settings), and for HOSTARRAY_DEVICE whether it
    # names a device here
    checks: dict[str, Callable[[], Any]] = {s.name: s.value for s in _environment.SETTINGS}
    checks["HOSTARRAY_DEVICE"] = _environment_default
    if not opencl:  # (as the devices: not checked where pyopencl does not import)
        del checks["HOSTARRAY_LINK"]
    rows = []
    for name, (sets, unset) in SETTINGS.items():
        value = os.environ.get(name)
        row: dict[str, Any] = {"name": name, "value": value, "sets": sets, "unset": unset}
        error = _check(checks[name]) if value and name in checks else None
        if error and value:  # (without the "NAME='value': " it starts with, said already)
            for said in (f"{name}={value.strip().lower()!r}: ", f"{name}={value!r}: ",
                         f"{name}: "):
                error = error.removeprefix(said)
            row["error"] = error
        rows.append(row)
    return rows


def _in_force(opencl: bool) -> dict[str, Any]:
    from . import _guard
    from ._compute.pool import pool_bytes, pool_limit
    from ._devices import default_device
    from ._placement import device_compute_threshold
    from .errors import HostPtrError

    out: dict[str, Any] = {}
    try:
        out["default_device"] = str(default_device())
    except HostPtrError as e:
        out["default_device"], out["default_device_error"] = None, str(e)
    out["link"] = _environment.link(checked=False) or "auto"
    try:
        _environment.link()
    except ValueError as e:  # a value that names no kind: nothing is in force (refused)
        out["link_error"] = str(e)
    block = _guard._THREAD.mode  # a transfer_guard block of this thread, over the default
    out["transfer_guard"] = block if block is not None else _guard._default
    out["transfer_guard_from"] = ("a transfer_guard block" if block is not None
                                  else "the process default")
    if out["transfer_guard"] not in _guard.MODES:  # HOSTARRAY_TRANSFER_GUARD's, refused
        out["transfer_guard_from"] = "HOSTARRAY_TRANSFER_GUARD, refused at the first transfer"
    try:
        out["device_compute_threshold"] = device_compute_threshold()
    except ValueError as e:
        out["device_compute_threshold"], out["device_compute_threshold_error"] = None, str(e)
    out["pool"] = {"bytes": pool_bytes(), "limit": pool_limit()}
    return out


def config_report() -> dict[str, Any]:
    """What :func:`show_config` prints, as plain data (``hostarray config --json``).

    Returns
    -------
    dict
        ``versions`` (``hostarray``, ``python``, ``platform``, ``numpy``, ``pyopencl``,
        ``array-api-compat``, ``optional``: name -> version or ``None``, ...),
        ``pyopencl_error`` (why pyopencl does not import, with the fix; ``None`` where it
        does), ``platforms`` (each ``index, name, vendor, version, devices``) and
        ``platforms_error``, ``devices`` (as :func:`device_report`'s,
        each with ``fp64`` too), ``left_out``, ``settings`` (each ``name, value, sets,
        unset``, and ``error`` for a value hostarray refuses), ``unknown_settings``
        (``HOSTARRAY_*`` variables set here that hostarray does not read) and ``in_force``
        (``default_device``, ``link``, ``transfer_guard``, ``device_compute_threshold``,
        ``pool``: ``{"bytes": ..., "limit": ...}``).

    Examples
    --------
    >>> from hostarray._config import config_report
    >>> r = config_report()
    >>> r["versions"]["numpy"] is not None, r["devices"][0]["device"]
    (True, 'cpu')
    """
    from . import _devices
    from ._info import supports_float64
    from .backends._pyopencl import import_problem

    problem = import_problem(quiet=True)
    opencl = problem is None
    if not opencl:  # the host alone from now on; what the failing import writes, held back
        with contextlib.redirect_stderr(io.StringIO()):
            _devices.devices()
    report: dict[str, Any] = {"versions": _versions(), "pyopencl_error": problem,
                              "platforms": [], "platforms_error": None}
    if opencl:
        report["platforms"], report["platforms_error"] = _platforms()
        devices = device_report()
        report["devices"], report["left_out"] = devices["devices"], devices["left_out"]
        if "no_opencl" in devices:
            report["no_opencl"] = devices["no_opencl"]
    else:  # the host alone, as device_report has it; the import error is said above
        host = _devices.devices()[0]
        report["devices"] = [{"device": str(host), "framework": host.framework,
                              "name": host.name, "type": host.type, "aliases": ["host"],
                              "alignment": host.alignment, "host_alignment": None,
                              "max_alloc": None, "host_unified": True, "link": None}]
        report["left_out"] = []
    by_name = {str(d): d for d in _devices.devices()}
    for row in report["devices"]:
        d = by_name.get(row["device"])
        row["fp64"] = None if d is None else supports_float64(d)
    report["settings"] = _settings(opencl)
    report["unknown_settings"] = {k: v for k, v in sorted(os.environ.items())
                                  if k.startswith("HOSTARRAY_") and k not in SETTINGS
                                  and k not in _PROJECT_ONLY}
    report["in_force"] = _in_force(opencl)
    default = report["in_force"]["default_device"]
    for row in report["devices"]:
        row["default"] = row["device"] == default
    return report


#: Variables of the project's own tests, CI and install script (not read by the package): not
#: typos, so the report does not flag them (CI sets HOSTARRAY_REQUIRE_DEVICE=1 throughout)
_PROJECT_ONLY = frozenset({
    "HOSTARRAY_REQUIRE_DEVICE", "HOSTARRAY_THOROUGH", "HOSTARRAY_TEST_DEVICE_COMPUTE",
    "HOSTARRAY_OCL_EXTRA", "HOSTARRAY_EXTRAS", "HOSTARRAY_HYPOTHESIS_EXAMPLES",
    "HOSTARRAY_EXPECT_OPENCL_DEVICES", "HOSTARRAY_REJECT_SHARE", "HOSTARRAY_SUITE_DEVICE",
    "HOSTARRAY_TEST_SECOND_PLATFORM"})


def format_config(report: dict[str, Any], wide: bool = False) -> list[str]:
    """The lines :func:`show_config` prints for a :func:`config_report`.

    Every line has at most 100 characters unless ``wide`` (long names are then in full,
    long sentences on one line).

    Examples
    --------
    >>> from hostarray._config import config_report, format_config
    >>> lines = format_config(config_report())
    >>> lines[0].startswith("hostarray "), max(map(len, lines)) <= 100
    (True, True)
    """
    from ._text import WIDTH, shorten, wrap

    width = None if wide else WIDTH
    cut: Callable[[str, int], str] = (lambda s, n: s) if wide else shorten
    lines: list[str] = []

    def say(text: str = "", indent: str = " " * 20) -> None:
        lines.extend(wrap(text, indent, width))

    def field(name: str, value: str) -> None:
        say(f"  {name:<16}  {value}")

    v = report["versions"]
    say(f"hostarray {v['hostarray']}: versions, devices and settings "
        f"(hostarray config --json: the same as JSON)")
    say()
    say("versions")
    field("hostarray", f"{v['hostarray']}  {v['hostarray_path']}")
    field("Python", f"{v['python']} ({v['implementation']})  {v['executable']}")
    field("platform", f"{v['platform']} ({v['machine']}, {v['cpus']} CPUs)")
    field("numpy", v["numpy"])
    problem = report["pyopencl_error"]
    pyopencl = v["pyopencl"] or "not installed"
    field("pyopencl", pyopencl if problem is None else f"{pyopencl}, does not import: {problem}")
    field("array-api-compat", v["array-api-compat"] or "not installed")
    for extra, names in _OPTIONAL.items():
        have = ", ".join(f"{n} {v['optional'][n] or '-'}" for n in names)
        field(f"[{extra}] extra", have)
    say()
    say("OpenCL platforms")
    if problem is not None:
        say(f"  none: {problem}", "    ")
    elif report["platforms_error"]:
        say(f"  none: {report['platforms_error']}", "    ")
    for p in report["platforms"]:
        n = p["devices"]
        count = f"{n} device{'' if n == 1 else 's'}"
        say(f"  {p['index']}  {cut(p['name'], 40)} ({cut(p['vendor'], 30)}): {count}", "     ")
        say(f"     {cut(p['version'], 95)}", "     ")
        if "error" in p:
            say(f"     {p['error']}", "     ")
    say()
    say("devices")
    header = ["device", "type", "link", "alignment", "host align", "fp64", "max alloc",
              "default"]
    rows = []
    for r in report["devices"]:
        link = r["link"] or ("error" if "link_error" in r else "-")
        rows.append([r["device"], r["type"], link, f"{r['alignment']} B",
                     "-" if r["host_alignment"] is None else f"{r['host_alignment']} B",
                     {True: "yes", False: "no", None: "?"}[r["fp64"]], _size(r["max_alloc"]),
                     "*" if r["default"] else ""])
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "  " + "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    lines.append(line(header))
    lines.append("  " + "  ".join("-" * w for w in widths))
    indent = " " * (widths[0] + 4)
    for r, row in zip(report["devices"], rows):
        lines.append(line(row))
        say(f"{indent}name: {cut(r['name'], WIDTH - len(indent) - 6)}", indent + "      ")
        if "link_error" in r:
            say(f"{indent}link check failed: {r['link_error']}", indent + "  ")
    for text, indent in left_out_lines(report):
        say("  " + text, "  " + indent)
    say()
    say("settings (the environment variables hostarray reads)")
    for s in report["settings"]:
        value = repr(s["value"])
        if not (s["value"] or "").strip():  # empty is unset, for every variable
            value = "unset" if s["value"] is None else f"{value}, as unset"
            value += f" ({s['unset']})"
        if "error" in s:
            value += f": refused: {s['error']}"
        say(f"  {s['name']:<34}  {value}", " " * 38)
        say(f"{'':<38}{s['sets']}", " " * 38)
    unknown = report.get("unknown_settings")
    if unknown:
        say(f"  set here, but not read by hostarray (a typo?): "
            f"{', '.join(f'{k}={v!r}' for k, v in unknown.items())}", "    ")
    say()
    say("in force")
    f = report["in_force"]
    dev = f["default_device"] or f"none: {f.get('default_device_error')}"
    say(f"  {'default device':<24}  {dev}", " " * 28)
    if "link_error" in f:
        link = f"none: refused: {f['link_error']}"
    elif f["link"] == "auto":
        link = "auto: each device's own, found by a probe kernel"
    else:
        link = f"{f['link']}, forced by HOSTARRAY_LINK"
    say(f"  {'host link':<24}  {link}", " " * 28)
    say(f"  {'transfer guard':<24}  {f['transfer_guard']} ({f['transfer_guard_from']})",
        " " * 28)
    if "device_compute_threshold_error" in f:
        threshold = f"none: {f['device_compute_threshold_error']}"
    elif f["device_compute_threshold"] is None:
        threshold = "off (nothing computes on a device)"
    else:
        n = f["device_compute_threshold"]
        threshold = f"{n} B ({_size(n)}): smaller operations stay on the host"
    say(f"  {'device-compute threshold':<24}  {threshold}", " " * 28)
    pool = f["pool"]
    say(f"  {'pool':<24}  {_size(pool['bytes'])} held of a {_size(pool['limit'])} limit "
        f"(idle device buffers for device results; ha.clear_pool() frees them)", " " * 28)
    return lines


def show_config(mode: str = "stdout", *, wide: bool = False,
                file: TextIO | None = None) -> dict[str, Any] | None:
    """Print the versions, devices and settings hostarray runs with: for a bug report.

    The report, in sections: **versions** (hostarray, Python, the platform, numpy,
    pyopencl, array-api-compat, and the optional packages of the ``bench`` and
    ``interop`` extras); **OpenCL platforms**; **devices**, each with its host-link kind,
    alignment, host alignment, double precision (fp64), largest allocation and the
    default, then the devices left out and why; **settings**: every ``HOSTARRAY_*``
    environment variable hostarray reads, with its value or ``unset`` (and why a value
    is refused); **in force**: the default device, the host link, the transfer guard,
    the device-compute threshold and the pool's bytes held and limit.  Where pyopencl
    does not import, the report has the rest and says why, with the fix.
    ``hostarray config`` prints the same (``--json``: as JSON).

    Parameters
    ----------
    mode : {"stdout", "dicts"}
        ``"stdout"`` prints the report; ``"dicts"`` returns it as a dict instead (the
        same report: keys ``versions``, ``pyopencl_error``, ``platforms``, ``devices``,
        ``left_out``, ``settings``, ``in_force``; ``hostarray config --json`` prints
        it), printing nothing (as ``numpy.show_config``).
    wide : bool
        Print long names and sentences in full; by default every line has at most 100
        characters.
    file : file, optional
        Where to print (default: ``sys.stdout``).

    Returns
    -------
    dict or None
        The report with ``mode="dicts"``, else ``None``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.show_config()  # doctest: +ELLIPSIS
    hostarray ...: versions, devices and settings (hostarray config --json: the same as JSON)
    ...
    settings (the environment variables hostarray reads)
      HOSTARRAY_DEVICE ...
    >>> ha.show_config("dicts")["in_force"]["pool"]  # doctest: +ELLIPSIS
    {'bytes': ..., 'limit': ...}
    """
    if mode not in ("stdout", "dicts"):
        raise ValueError(f"mode {mode!r}: use 'stdout' or 'dicts'")
    report = config_report()
    if mode == "dicts":
        return report
    print("\n".join(format_config(report, wide=wide)), file=file or sys.stdout)
    return None


def print_json(file: TextIO | None = None) -> None:
    """Print :func:`config_report` as JSON (``hostarray config --json``)."""
    print(json.dumps(config_report(), indent=2), file=file or sys.stdout)


# -- the device list and the version, shared with the command line ------------------------

def found_opencl(rows: list[dict[str, Any]]) -> bool:
    """Whether the device rows of a report hold an OpenCL device."""
    return any(r.get("framework") == "opencl" for r in rows)


def left_out_lines(report: dict[str, Any]) -> list[tuple[str, str]]:
    """What ``hostarray devices`` and ``hostarray config`` say of the devices left out (and
    of no OpenCL at all), as ``(line, indent of its continuation)``."""
    lines = []
    if "no_opencl" in report:
        lines.append((f"no OpenCL device: {report['no_opencl']}", "    "))
    if report["left_out"]:
        lines.append(("left out (listed by the driver, but failed a probe kernel):", ""))
        lines += [(f"  {lo['device']} ({lo['name']}): {lo['why']}", "      ")
                  for lo in report["left_out"]]
    elif "no_opencl" not in report:
        lines.append(("left out: none (every device the drivers listed ran a probe kernel)",
                      ""))
    return lines


def device_report() -> dict[str, Any]:
    """Every device found and every device left out, as plain data.

    The host-link kind of each OpenCL device comes from the runtime's check
    (a probe kernel writes host memory; the kind is ``shared`` when the write
    is visible without a map, ``mapped`` otherwise), unless ``HOSTARRAY_LINK``
    forces a kind.

    Returns
    -------
    dict
        ``{"devices": [...], "left_out": [...], "default": str | None, "link_forced": str |
        None}`` (and ``default_error`` when ``HOSTARRAY_DEVICE`` names no device here,
        ``link_forced_error`` when ``HOSTARRAY_LINK`` names no link kind);
        each device has ``device, framework, name, type, aliases, alignment,
        host_alignment, max_alloc, host_unified, link, default`` (and ``platform``,
        ``driver`` for OpenCL).  ``aliases`` are the other names ``ha.device`` takes for
        it: its kind selectors (``opencl:gpu:0``, ``opencl:gpu``, ``gpu``) and ``opencl``
        for the first OpenCL device.  ``alignment`` is where a view inside a buffer may
        start (sub-buffer origins, ``CL_DEVICE_MEM_BASE_ADDR_ALIGN``); ``host_alignment``
        is what host memory needs for a buffer to use it in place (found by a probe;
        ``None`` for the host), and an array's memory needs its element size too.

    Examples
    --------
    >>> from hostarray.__main__ import device_report
    >>> r = device_report()
    >>> r["devices"][0]["device"], r["devices"][0]["link"], r["devices"][0]["aliases"]
    ('cpu', None, ['host'])
    """
    from . import _devices, _settings
    from ._devices import aliases
    from .errors import HostPtrError

    try:
        default: Any = _devices.default_device()
        default_error = None
    except HostPtrError as e:  # a bad HOSTARRAY_DEVICE: still list what is here
        default, default_error = None, str(e)
    rows = []
    for d in _devices.devices():
        row: dict[str, Any] = {
            "device": str(d), "framework": d.framework, "name": d.name, "type": d.type,
            "aliases": aliases(d), "alignment": d.alignment, "host_alignment": None,
            "max_alloc": None if d.framework == "host" else d.max_alloc,
            "host_unified": d.host_unified, "link": None, "default": d == default,
        }
        if d.framework == "opencl":
            cl_dev = d._cl_device
            row["platform"] = cl_dev.platform.name.strip()
            row["driver"] = cl_dev.driver_version.strip()
            try:
                row["link"] = d.link
                row["host_alignment"] = d.host_alignment
            except Exception as e:  # a failed check is reported, not hidden
                row["link_error"] = f"{type(e).__name__}: {e}"
        rows.append(row)
    left = [{"device": s, "name": n, "why": w} for s, n, w in _devices.left_out_devices()]
    none = not found_opencl(rows)
    if none:
        left = [lo for lo in left if lo["device"] != "opencl"]  # said once, in "no_opencl"
    report = {"devices": rows, "left_out": left,
              "default": None if default is None else str(default),
              "link_forced": _settings.link(checked=False)}
    if none:
        report["no_opencl"] = _devices.why_no_opencl()
    if default_error is not None:
        report["default_error"] = default_error
    link_error = _settings.LINK.problem()
    if link_error is not None:  # a wrong HOSTARRAY_LINK: still list what is here
        report["link_forced_error"] = link_error
    return report


def _size(n: int | None) -> str:
    """Bytes as a short human size (``2 GiB``); ``-`` for no limit."""
    if n is None:
        return "-"
    x = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if x < 1024:
            return f"{x:.3g} {unit}"
        x /= 1024
    return f"{x:.3g} PiB"


def _version() -> str:
    """The installed version (package metadata), else ``hostarray.__version__``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hostarray")
    except PackageNotFoundError:
        from ._version import __version__

        return __version__
