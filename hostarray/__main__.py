"""Command line: ``hostarray devices``, ``hostarray demo``, ``hostarray bench``.

``hostarray devices`` lists every device hostarray found (and every device it
left out, with why); ``hostarray demo`` runs a numpy -> kernel -> numpy
pipeline and prints the bytes hostarray did not move; ``hostarray bench``
measures attach, round trips and laziness (see the performance page).
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
        None}`` (and ``default_error`` when ``HOSTARRAY_DEVICE`` names no device here);
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

    from ._errors import HostPtrError

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
        return 0 if report["default"] is not None else 2
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
    if report["link_forced"]:
        print(f"link: forced to {report['link_forced']!r} by HOSTARRAY_LINK")
    else:
        print("link: found by a probe kernel; shared = the device works on the host bytes, "
              "mapped = the\n      driver mirrors them and copies on each publish/acquire")
    opencl = [r["device"] for r in report["devices"] if r["framework"] == "opencl"]
    if report["default"] is None:
        print(f"default: HOSTARRAY_DEVICE is wrong: {report['default_error']}")
        return 2
    kernels = (report["default"] if report["default"] != "cpu"
               else (opencl[0] if opencl else "none"))
    print(f"default: {report['default']} (arrays); kernels and `hostarray demo`: {kernels}; "
          f"set HOSTARRAY_DEVICE to change")
    return 0


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
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hostarray", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("devices", help="list devices, their host-link kind and alignment")
    d.add_argument("--json", action="store_true", help="print JSON instead of a table")
    d.set_defaults(func=cmd_devices)
    m = sub.add_parser("demo", help="numpy -> kernel -> numpy pipeline, with the bytes saved")
    m.add_argument("--device", default=None, help="device to run on (default: "
                   "HOSTARRAY_DEVICE, else the first OpenCL device)")
    m.add_argument("--size", type=_positive_int, default=1 << 22, help="signal length in float32 "
                   "elements (default: 4194304 = 16 MiB)")
    m.add_argument("--repeat", type=_positive_int, default=3, help="timed runs of each pipeline; "
                   "the best is shown (default: 3)")
    m.set_defaults(func=cmd_demo)
    b = sub.add_parser("bench", help="measure attach, round trip and laziness on a device")
    b.add_argument("--device", default=None, help="device to measure (default: "
                   "HOSTARRAY_DEVICE, else the first OpenCL device)")
    b.add_argument("--json", action="store_true", help="print JSON instead of tables")
    b.add_argument("--max-size", default="64MiB", help="largest array size (default: 64MiB)")
    b.add_argument("--repeat", type=int, default=None, help="timed runs per measurement; "
                   "medians are shown (default: 5)")
    b.add_argument("--plot", default=None, help="write a PNG plot here (needs matplotlib)")
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
    from ._errors import HostPtrError

    try:
        return args.func(args)
    except HostPtrError as e:  # a bad device name etc.: one sentence, no traceback
        print(f"hostarray {args.command}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
