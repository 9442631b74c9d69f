"""Shared command line of the benchmark scripts: device, sizes, repeats, JSON output.

Every script measures through :mod:`hostarray.bench` (the same code as
``hostarray bench``), prints its tables (medians and ratios) to stdout and
progress to stderr, and with ``--json PATH`` also writes the raw numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from hostarray.bench import collect, format_tables, parse_size  # noqa: E402


def parser(description: str, default_max: str = "256MiB") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--device", default=None,
                   help="OpenCL device (default: HOSTARRAY_DEVICE, else the first one)")
    p.add_argument("--max-size", default=default_max,
                   help=f"largest size measured (default {default_max}); sizes that do not "
                        f"fit in host memory or one device allocation are skipped")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per median (default 5)")
    p.add_argument("--json", default=None, metavar="PATH", help="also write the numbers here")
    return p


def run(parts: tuple[str, ...], description: str, argv: list[str] | None = None,
        **kw: object) -> dict:
    args = parser(description).parse_args(argv)
    result = collect(args.device, parse_size(args.max_size), args.repeat, parts=parts, **kw)
    print(format_tables(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, default=float)
    return result
