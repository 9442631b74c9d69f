"""Shared command line of the benchmark scripts: device, sizes, repeats, JSON output.

Every script measures through :mod:`hostarray.bench` (the same code as
``hostarray bench``), prints its tables (medians and ratios, each table followed
by a legend) to stdout and progress to stderr, and with ``--json PATH`` also
writes the raw numbers (``--csv PATH``: the same as one long-form CSV, as
``hostarray bench --csv`` writes).  Sizes are read by :func:`hostarray.bench.parse_size`:
``GB`` is 10**9 bytes, ``GiB`` 2**30.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from hostarray.bench import collect, format_csv, format_tables, parse_size  # noqa: E402


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def parser(description: str, default_max: str = "256MiB") -> argparse.ArgumentParser:
    """The options every measuring script takes: --device, --max-size, --repeat, --json,
    --csv."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--device", default=None,
                   help="OpenCL device (default: HOSTARRAY_DEVICE, else the first one)")
    p.add_argument("--max-size", type=_size, default=default_max, metavar="SIZE",
                   help=f"largest size measured (default {default_max}; GB = 10**9 bytes, "
                        f"GiB = 2**30); sizes that do not fit in host memory or one device "
                        f"allocation are skipped")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per median (default 5)")
    p.add_argument("--json", default=None, metavar="PATH", help="also write the numbers here")
    p.add_argument("--csv", default=None, metavar="PATH",
                   help="also write the numbers here, as one long-form CSV")
    return p


def measure(args: argparse.Namespace, parts: tuple[str, ...], **kw: object) -> dict:
    """Run ``parts`` with the options in ``args``; print the tables, write the JSON and
    CSV."""
    result = collect(args.device, args.max_size, args.repeat, parts=parts, **kw)
    print(format_tables(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, default=float)
    if getattr(args, "csv", None):
        with open(args.csv, "w", encoding="utf-8", newline="") as f:
            f.write(format_csv(result))
    return result


def run(parts: tuple[str, ...], description: str, argv: list[str] | None = None,
        **kw: object) -> dict:
    """Parse the command line (``argv``, else ``sys.argv``) and :func:`measure`."""
    return measure(parser(description).parse_args(argv), parts, **kw)


def probe_device(spec: str | None, size: int) -> tuple[Any, Any, int]:
    """A probe's setup: the OpenCL device ``spec`` (else the first one), with the device
    compute path on for every size; its queue; and the float32 elements of ``size`` bytes."""
    import hostarray as ha

    dev = ha.device(spec) if spec else [d for d in ha.devices() if d.framework == "opencl"][0]
    ha.set_device_compute_threshold(0)
    return dev, ha.hostptr.queue(dev), size // 4
