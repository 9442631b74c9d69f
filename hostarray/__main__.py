"""Command line: ``hostarray devices``, ``hostarray demo``, ``hostarray bench``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np

__all__ = ["main"]


def _device_rows() -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    import hostarray as ha

    default = ha.default_device()
    rows = []
    for d in ha.devices():
        rows.append({
            "device": str(d), "framework": d.framework, "name": d.name, "type": d.type,
            "alignment": d.alignment, "max_alloc": d.max_alloc,
            "host_unified": d.host_unified, "link": d.link or "-", "default": d == default,
        })
    left = [{"device": s, "name": n, "why": w} for s, n, w in ha._devices.left_out_devices()]
    return rows, left


def cmd_devices(args: argparse.Namespace) -> int:
    rows, left = _device_rows()
    if args.json:
        print(json.dumps({"devices": rows, "left_out": left}, indent=2))
        return 0
    cols = ["device", "type", "link", "alignment", "max_alloc", "host_unified", "default", "name"]
    table = [[str(r[c]) if c != "max_alloc" else _size(r[c]) for c in cols] for r in rows]
    widths = [max(len(c), *(len(t[i]) for t in table)) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths)))
    for t in table:
        print("  ".join(v.ljust(w) for v, w in zip(t, widths)))
    for lo in left:
        print(f"left out: {lo['device']} ({lo['name']}): {lo['why']}")
    return 0


def _size(n: int) -> str:
    if n >= 2**62:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024:
            return f"{n:g} {unit}"
        n /= 1024
    return f"{n:g} PiB"


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(device=args.device, size=args.size, out=sys.stdout)


def cmd_bench(args: argparse.Namespace) -> int:
    try:
        from .bench import run_bench
    except ImportError as e:
        print(f"hostarray bench is not available: {e}", file=sys.stderr)
        return 2
    return run_bench(args)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``hostarray`` command."""
    p = argparse.ArgumentParser(prog="hostarray", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("devices", help="list devices, their host-link kind and alignment")
    d.add_argument("--json", action="store_true", help="print JSON instead of a table")
    d.set_defaults(func=cmd_devices)
    m = sub.add_parser("demo", help="numpy -> kernel -> numpy pipeline, with the bytes saved")
    m.add_argument("--device", default=None, help="device to run on (default: "
                   "HOSTARRAY_DEVICE, else the first OpenCL device)")
    m.add_argument("--size", type=int, default=1 << 22, help="signal length (elements)")
    m.set_defaults(func=cmd_demo)
    b = sub.add_parser("bench", help="measure attach, round trip and laziness on a device")
    b.add_argument("--device", default=None)
    b.add_argument("--json", action="store_true")
    b.add_argument("--max-size", default="64MiB")
    b.add_argument("--plot", default=None, help="write a PNG plot here (needs matplotlib)")
    b.set_defaults(func=cmd_bench)
    args = p.parse_args(argv)
    t = time.perf_counter()
    rc = args.func(args)
    if getattr(args, "command", "") == "demo":
        print(f"total {time.perf_counter() - t:.2f} s")
    return rc


if __name__ == "__main__":
    sys.exit(main())

_ = np
