"""Cost of ``np.asarray(x)`` on a HostPtrArray: O(1), no copy, at any size.

Median time of ``np.asarray(x)`` for 1 MiB and 1 GiB arrays on the host and
attached to the first OpenCL device (steady state: no kernel in between), next
to ``np.array(x)`` (a copy) for scale.  The view shares ``x``'s memory.

    python3 benchmarks/bench_asarray.py [--sizes 1MiB,1GiB] [--repeat 2000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import hostarray as ha  # noqa: E402

UNITS = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def _size(text: str) -> int:
    for unit, factor in UNITS.items():
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * factor)
    return int(text)


def _median_seconds(f, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1MiB,1GiB")
    p.add_argument("--repeat", type=int, default=2000)
    args = p.parse_args(argv)
    devs = [d for d in ha.devices() if d.framework == "opencl"]
    print(f"{'size':>8} {'where':>12} {'np.asarray':>12} {'np.array (copy)':>16} shares")
    for text in args.sizes.split(","):
        n = _size(text.strip())
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
