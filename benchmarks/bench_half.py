"""Kernel on one half, host reads the other: hostarray vs CuPy and pyopencl.array.

The data is already on the device (for hostarray, in hostarray memory attached to the
device; host and device both hold it).  One run: a kernel ``x = 2x + 1`` over the first
half view ``x[: n//2]``; then the host sums the second half, which no kernel touched
(``np.asarray(x[n//2:]).sum()``, accumulated in float64), and reads one element of the
first half (``x[0]``).  Before each run (untimed) a kernel rewrites the first half's
starting values, so every run computes the same thing.

* hostarray: ``prg.affine(n//2, x[: n//2])``, ``np.asarray(x[n//2:]).sum()``, ``float(x[0])``;
* CuPy (when installed): an ``ElementwiseKernel`` on ``d[: n//2]``, ``d[n//2:].get().sum()``,
  ``float(d[0])``;
* pyopencl.array: the same OpenCL kernel as hostarray on ``d[: n//2]``,
  ``d[n//2:].get().sum()``, ``float(d[0].get())``;
* cl: plain pyopencl, ``enqueue_copy`` of the second half and of 4 bytes.

The minimum the host must receive is 4 bytes (``x[0]``): it already holds the second half.
The others copy the second half anyway (n/2 bytes); what hostarray moves is counted by
``ha.stats()`` (publishes, acquires, bytes) for one run.  The sum, ``x[0]`` and the whole
array after the last run are checked against numpy.

    python3 benchmarks/bench_half.py [--device opencl:0:0] [--sizes 1MiB,64MiB,1GiB]
                                     [--repeat 5] [--link copied] [--json PATH]
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from _peers import Workload, main, x0


def prepare(lib: Any, x: Any, n: int) -> None:
    lib.init(x, n // 2)  # the first half's starting values, written by the device


def run(lib: Any, x: Any, n: int) -> list[float]:
    h = n // 2
    lib.affine(x, h)
    return [lib.sum_from(x, h), lib.read0(x)]


def expected(n: int) -> list[float]:
    a = x0(n)
    return [float(a[n // 2:].sum(dtype=np.float64)), float(2 * a[0] + 1)]


def final(n: int) -> np.ndarray:
    a = x0(n)
    a[: n // 2] = 2 * a[: n // 2] + 1
    return a


WORKLOAD = Workload(
    key="half",
    title="half: kernel x = 2x + 1 on x[:n/2], host sums x[n/2:], then reads x[0]",
    prepare=prepare,
    run=run,
    expected=expected,
    final=final,
    kernels=lambda n: [n // 2],
    peer_bytes=lambda n: 4 * (n - n // 2) + 4,
    minimum_bytes=lambda n: 4,
    legend=[("run", "the data on the device and the host; kernel x = 2x + 1 on the view "
                    "x[:n/2]; the host sums x[n/2:] (in float64), then float(x[0])")],
    params={"dtype": "float32"},
)

if __name__ == "__main__":
    sys.exit(main(WORKLOAD, __doc__))
