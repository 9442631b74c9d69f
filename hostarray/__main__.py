"""The ``hostarray`` command: ``devices``, ``demo``, ``bench`` and ``--version``.

``hostarray devices`` lists every device hostarray found (and every device it
left out, with why); ``hostarray demo`` runs a numpy -> kernel -> numpy
pipeline and prints the bytes hostarray did not move; ``hostarray bench``
measures attach, round trips and laziness (see the performance page);
``hostarray --version`` prints the installed version.

Every help text is plain text: no reStructuredText or Markdown markup.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

__all__ = ["main", "device_report"]

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
        each device has ``device, framework, name, type, alignment, host_alignment,
        max_alloc, host_unified, link, default`` (and ``platform``, ``driver`` for
        OpenCL).  ``alignment`` is where a view inside a buffer may start (sub-buffer
        origins, ``CL_DEVICE_MEM_BASE_ADDR_ALIGN``); ``host_alignment`` is what host
        memory needs for a buffer to use it in place (found by a probe; ``None`` for the
        host), and an array's memory needs its element size too.

    Examples
    --------
    >>> from hostarray.__main__ import device_report
    >>> r = device_report()
    >>> r["devices"][0]["device"], r["devices"][0]["link"]
    ('cpu', None)
    """
    import hostarray as ha

    from .backends.opencl import forced_link
    from .errors import HostPtrError

    try:
        default: Any = ha.default_device()
        default_error = None
    except HostPtrError as e:  # a bad HOSTARRAY_DEVICE: still list what is here
        default, default_error = None, str(e)
    forced = os.environ.get("HOSTARRAY_LINK", "").strip().lower()
    rows = []
    for d in ha.devices():
        row: dict[str, Any] = {
            "device": str(d), "framework": d.framework, "name": d.name, "type": d.type,
            "alignment": d.alignment, "host_alignment": None,
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
    left = [{"device": s, "name": n, "why": w} for s, n, w in ha._devices.left_out_devices()]
    report = {"devices": rows, "left_out": left,
              "default": None if default is None else str(default),
              "link_forced": forced if forced and forced != "auto" else None}
    if default_error is not None:
        report["default_error"] = default_error
    try:
        forced_link()
    except ValueError as e:  # a wrong HOSTARRAY_LINK: still list what is here
        report["link_forced_error"] = str(e)
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


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
    return lines


def cmd_devices(args: argparse.Namespace) -> int:
    report = device_report()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0 if report["default"] is not None and "link_forced_error" not in report else 2
    header = ["device", "framework", "type", "link", "alignment", "host align", "max alloc",
              "unified", "default", "name"]
    rows = []
    for r in report["devices"]:
        link = r["link"] or ("error" if "link_error" in r else "-")
        host_align = "-" if r["host_alignment"] is None else f"{r['host_alignment']} B"
        rows.append([r["device"], r["framework"], r["type"], link, f"{r['alignment']} B",
                     host_align, _size(r["max_alloc"]), "yes" if r["host_unified"] else "no",
                     "*" if r["default"] else "", r["name"]])
    print("\n".join(_table(header, rows)))
    for r in report["devices"]:
        if "link_error" in r:
            print(f"link check failed on {r['device']}: {r['link_error']}")
    print()
    if report["left_out"]:
        print("left out (listed by the driver, but failed a probe kernel):")
        for lo in report["left_out"]:
            print(f"  {lo['device']} ({lo['name']}): {lo['why']}")
    else:
        print("left out: none (every device the drivers listed ran a probe kernel)")
    print("alignment: where a view passed to a kernel may start inside its array's buffer; "
          "host align:\n      what host memory needs for a buffer to use it in place (probed; "
          "an array also\n      needs its element size), else ha.asarray copies it")
    link_error = report.get("link_forced_error")
    if link_error:
        print(f"link: {link_error}")
    elif report["link_forced"]:
        print(f"link: forced to {report['link_forced']!r} by HOSTARRAY_LINK")
    else:
        print("link: found by a probe kernel; shared = the device works on the host bytes, "
              "mapped = the\n      driver mirrors them and copies on each publish/acquire")
    opencl = [r["device"] for r in report["devices"] if r["framework"] == "opencl"]
    if report["default"] is None:
        print(f"default: HOSTARRAY_DEVICE is wrong: {report['default_error']}")
        return 2
    setting_error = _settings_error()
    if setting_error:  # a wrong threshold or transfer-guard variable: said after the list
        print(f"settings: {setting_error}")
        return 2
    if link_error:
        return 2
    kernels = (report["default"] if report["default"] != "cpu"
               else (opencl[0] if opencl else "none"))
    print(f"default: {report['default']} (arrays); kernels and `hostarray demo`: {kernels}; "
          f"set HOSTARRAY_DEVICE to change")
    return 0


def _settings_error() -> str | None:
    """What is wrong with ``HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES`` or
    ``HOSTARRAY_TRANSFER_GUARD`` (each raises ``ValueError`` at its first use), or ``None``."""
    from ._compute import device_compute_threshold
    from ._guard import check_environment

    try:
        device_compute_threshold()
        check_environment()
    except ValueError as e:
        return str(e)
    return None


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(device=args.device, size=args.size, repeat=args.repeat, out=sys.stdout)


def cmd_bench(args: argparse.Namespace) -> int:
    try:
        from .bench import run_bench
    except ImportError as e:
        print(f"hostarray bench is not available: {e}", file=sys.stderr)
        return 2
    return run_bench(args)


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n


def _size_arg(text: str) -> int:
    """An argparse type: bytes, read by :func:`hostarray.bench.parse_size`."""
    from .bench import parse_size

    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _version() -> str:
    """The installed version (package metadata), else ``hostarray.__version__``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hostarray")
    except PackageNotFoundError:
        import hostarray

        return str(getattr(hostarray, "__version__", "unknown"))


_DESCRIPTION = ("hostarray: numpy arrays in host memory that OpenCL devices use in place. "
                "This command lists the devices, runs a demonstration and measures.")
_EPILOG = ("Environment: HOSTARRAY_DEVICE names the default device (for example opencl:0:0); "
           "HOSTARRAY_LINK forces the host-link kind (shared, mapped or copied). "
           "Run 'hostarray COMMAND --help' for the options of a command.")
_DEVICES = ("List the host and every OpenCL device that ran a probe kernel, with its host-link "
            "kind (shared: the device works on the host bytes; mapped: the driver mirrors them "
            "and copies on each publish and acquire), the alignment a view passed to a kernel "
            "needs, the alignment host memory needs to be used in place, the largest allocation "
            "and the default device; then every device the drivers listed but that failed the "
            "probe, with why.")
_DEMO = ("Run one pipeline three ways: through hostarray (numpy signal, smoothing kernel, "
         "np.quantile on the host, clipping kernel, result back to numpy), as an eager pyopencl "
         "program that copies around every kernel, and in pure numpy. Checks that the results "
         "agree and prints the publishes, acquires, bytes moved and time of each. Exit status: "
         "0, 1 if a check fails, 2 without an OpenCL device.")
_BENCH = ("Measure on one OpenCL device what hostarray costs and saves against the pyopencl code "
          "a user would write instead: attach, round trip (host write, kernel, host read), "
          "publish and acquire against enqueue_copy, and a solver under lazy and eager "
          "synchronisation. Tables go to stdout, at most 100 characters wide, each followed "
          "by a legend of its columns and ratios; progress goes to stderr.")
_BENCH_EPILOG = ("Sizes are read as written: KB, MB, GB, TB are powers of 1000 and KiB, MiB, GiB, "
                 "TiB powers of 1024 (1GB = 1000000000 bytes, 1GiB = 1073741824 bytes); B or no "
                 "unit means bytes. Units are case-insensitive and may follow a space; a bare "
                 "k, M or G is refused as ambiguous. Exit status: 0, 1 if a check or a result "
                 "was wrong, 2 on a bad argument or without an OpenCL device.")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hostarray", description=_DESCRIPTION, epilog=_EPILOG)
    p.add_argument("--version", action="version", version=f"hostarray {_version()}",
                   help="print the installed version of hostarray and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    d = sub.add_parser("devices", help="list devices, their host-link kind and alignment",
                       description=_DEVICES)
    d.add_argument("--json", action="store_true", help="print JSON instead of a table")
    d.set_defaults(func=cmd_devices)
    m = sub.add_parser("demo", help="numpy -> kernel -> numpy pipeline, with the bytes saved",
                       description=_DEMO)
    m.add_argument("--device", default=None, help="device to run on (default: "
                   "HOSTARRAY_DEVICE, else the first OpenCL device)")
    m.add_argument("--size", type=_positive_int, default=1 << 22, metavar="N",
                   help="signal length in float32 elements (default: 4194304 = 16 MiB)")
    m.add_argument("--repeat", type=_positive_int, default=3, metavar="K",
                   help="timed runs of each pipeline; the best is shown (default: 3)")
    m.set_defaults(func=cmd_demo)
    b = sub.add_parser("bench", help="measure attach, round trip and laziness on a device",
                       description=_BENCH, epilog=_BENCH_EPILOG)
    b.add_argument("--device", default=None, help="device to measure (default: "
                   "HOSTARRAY_DEVICE, else the first OpenCL device)")
    b.add_argument("--json", action="store_true", help="print JSON instead of tables")
    b.add_argument("--max-size", type=_size_arg, default="64MiB", metavar="SIZE",
                   help="largest array size, for example 64MiB, 1GiB or 500MB (default: 64MiB); "
                        "sizes that do not fit in host memory or one device allocation are "
                        "skipped")
    b.add_argument("--repeat", type=_positive_int, default=None, metavar="N",
                   help="timed runs per measurement; medians are shown (default: 5; the solver: "
                        "at most 3)")
    b.add_argument("--plot", default=None, metavar="PNG",
                   help="also write a plot of time against size here (needs matplotlib)")
    b.set_defaults(func=cmd_bench)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``hostarray`` command; returns the exit status.

    Examples
    --------
    >>> from hostarray.__main__ import main
    >>> main(["devices"])  # doctest: +ELLIPSIS
    device  framework  type ...
    0
    """
    args = _parser().parse_args(argv)
    from .backends.opencl import forced_link
    from .errors import HostPtrError

    if args.command != "devices":  # (devices lists what is here, then says so itself)
        try:  # a wrong HOSTARRAY_LINK: one sentence, before any work
            forced_link()
        except ValueError as e:
            print(f"hostarray {args.command}: {e}", file=sys.stderr)
            return 2
        setting_error = _settings_error()  # the threshold and transfer-guard variables too
        if setting_error:
            print(f"hostarray {args.command}: {setting_error}", file=sys.stderr)
            return 2
    try:
        return args.func(args)
    except HostPtrError as e:  # a bad device name etc.: one sentence, no traceback
        print(f"hostarray {args.command}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
