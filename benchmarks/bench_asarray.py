"""Cost of ``np.asarray(x)`` on a HostPtrArray: O(1), no copy, at any size.

Median time of ``np.asarray(x)`` for 1 MiB and 1 GiB arrays on the host and
attached to the first OpenCL device (steady state: no kernel in between), next
to ``np.array(x)`` (a copy) for scale.  The view shares ``x``'s memory.

    python3 benchmarks/bench_asarray.py [--sizes 1MiB,1GiB] [--repeat 2000]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import hostarray as ha  # noqa: E402
from hostarray.bench import _median, parse_size  # noqa: E402


def _median_seconds(f, repeat: int) -> float:
    """Median seconds of ``f()`` over ``repeat`` calls (hostarray.bench's median, no warm-up)."""
    return _median(lambda _: f(), repeat, warmup=0)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1MiB,1GiB",
                   help="comma-separated sizes, e.g. 1MiB,1GiB (GB = 10**9 bytes, GiB = 2**30)")
    p.add_argument("--repeat", type=int, default=2000, help="calls per median (default 2000)")
    args = p.parse_args(argv)
    devs = [d for d in ha.devices() if d.framework == "opencl"]
    print(f"{'size':>8} {'where':>12} {'np.asarray':>12} {'np.array (copy)':>16} shares")
    for text in args.sizes.split(","):
        n = parse_size(text.strip())
        x = ha.zeros(n // 8)
        for dev in [None, *devs[:1]]:
            y = x if dev is None else x.to_device(dev)
            v = np.asarray(y)
            shares = np.shares_memory(v, np.asarray(x)) and v.nbytes == n
            del v
            t_view = _median_seconds(lambda y=y: np.asarray(y), args.repeat)
            t_copy = _median_seconds(lambda y=y: np.array(y), max(3, min(args.repeat, 2**28 // n)))
            where = "host" if dev is None else str(dev)
            print(f"{text:>8} {where:>12} {t_view * 1e6:>10.2f}us {t_copy * 1e3:>14.3f}ms "
                  f"{shares}")


if __name__ == "__main__":
    main()
