"""Dispatch overhead of the array API namespace: numpy vs array_api_strict vs hostarray.

For each operation (``a + b``, a basic slice ``x[2:5]``, ``sum(x)``, ``matmul``) on a
small (10 elements) and a large (10**7 elements) input, prints the median time per
call of each library, hostarray's overhead above numpy, and the ratios hostarray /
numpy and hostarray / array_api_strict.

Times are CPU time of this process (``time.process_time``) by default, so that other
processes competing for the cores inflate all three libraries less; ``--wall`` uses
wall-clock time instead.

Run: ``python benchmarks/bench_dispatch.py [--repeat N] [--wall] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import timeit
from collections.abc import Callable
from functools import partial
from typing import Any

import array_api_strict as xps
import numpy as np

import hostarray as ha

SMALL, LARGE = 10, 10**7


def _inputs(n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n)
    b = rng.standard_normal(n)
    if n == SMALL:
        m1, m2 = rng.standard_normal((2, 5)), rng.standard_normal((5, 2))
    else:  # a matrix-vector product over 10**7 matrix elements
        m1, m2 = rng.standard_normal((1000, n // 1000)), rng.standard_normal(n // 1000)
    return {"a": a, "b": b, "m1": m1, "m2": m2}


def _convert(data: dict[str, np.ndarray], xp: Any) -> dict[str, Any]:
    # numpy and hostarray work on the very same memory (ha.asarray shares it), so
    # page placement can't favour either; array_api_strict gets its own copy.
    return data if xp is np else {k: xp.asarray(v) for k, v in data.items()}


def _ops(xp: Any) -> dict[str, Callable[[dict[str, Any]], Any]]:
    return {
        "add": lambda d: d["a"] + d["b"],
        "slice": lambda d: d["a"][2:5],
        "sum": lambda d: xp.sum(d["a"]),
        "matmul": lambda d: d["m1"] @ d["m2"],
    }


def _calls_for(fn: Callable[[], Any], min_time: float, clock: Callable[[], float]) -> int:
    t = timeit.Timer(fn, timer=clock)
    number = 1
    while t.timeit(number) < min_time:
        number *= 2
    return number


def run(repeat: int = 7, clock: Callable[[], float] = time.process_time) -> list[dict[str, Any]]:
    """Median seconds per call for every (op, size, library).

    The libraries are timed in turn within each round, so load from other processes
    on the machine affects all three alike instead of whichever ran last."""
    rows = []
    libs = {"numpy": np, "array_api_strict": xps, "hostarray": ha}
    for size in (SMALL, LARGE):
        base = _inputs(size)
        data = {name: _convert(base, xp) for name, xp in libs.items()}
        for op in ("add", "slice", "sum", "matmul"):
            calls = {}
            for name, xp in libs.items():
                f, d = _ops(xp)[op], data[name]
                fn = partial(f, d)
                calls[name] = (timeit.Timer(fn, timer=clock),
                               _calls_for(fn, 0.02 if size == SMALL else 0.2, clock))
            samples: dict[str, list[float]] = {name: [] for name in libs}
            order = list(calls)
            for i in range(repeat):
                # rotate who goes first: allocator and cache state left by the previous
                # library's calls then bias no library systematically
                for name in order[i % 3:] + order[:i % 3]:
                    timer, number = calls[name]
                    samples[name].append(timer.timeit(number) / number)
            row: dict[str, Any] = {"op": op, "size": size}
            row.update({name: statistics.median(v) for name, v in samples.items()})
            rows.append(row)
    return rows


def report(rows: list[dict[str, Any]]) -> str:
    head = (f"{'op':7} {'size':>9} {'numpy us':>11} {'strict us':>11} {'hostarray us':>13} "
            f"{'ha-np us':>9} {'ha/np':>7} {'ha/strict':>9}")
    lines = [head, "-" * len(head)]
    for r in rows:
        np_t, st_t, ha_t = r["numpy"], r["array_api_strict"], r["hostarray"]
        lines.append(f"{r['op']:7} {r['size']:>9} {np_t * 1e6:11.3f} {st_t * 1e6:11.3f} "
                     f"{ha_t * 1e6:13.3f} {(ha_t - np_t) * 1e6:9.3f} {ha_t / np_t:7.3f} "
                     f"{ha_t / st_t:9.3f}")
    lines += ["  ha-np us   hostarray time - numpy time per call, in microseconds",
              "  ha/np      hostarray time / numpy time: > 1 means hostarray is slower, "
              "by that factor",
              "  ha/strict  hostarray time / array_api_strict time: > 1 means hostarray is "
              "slower"]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7, help="timing runs per case (median)")
    p.add_argument("--wall", action="store_true", help="wall-clock instead of CPU time")
    p.add_argument("--json", help="also write the raw medians (seconds) to this file")
    args = p.parse_args()
    rows = run(args.repeat, time.perf_counter if args.wall else time.process_time)
    print(f"numpy {np.__version__}, array_api_strict {xps.__version__}, "
          f"hostarray {ha.__version__}; median {'wall' if args.wall else 'CPU'} time per call, "
          f"in microseconds")
    print(report(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
