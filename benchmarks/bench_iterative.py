"""Iterative kernels with host reads of one element: hostarray vs CuPy and pyopencl.array.

The data is already on the device (a kernel wrote it; for hostarray, in hostarray memory
attached to the device).  One run: 20 kernel steps ``x = 2x + 1`` over the whole float32
array; after steps 5, 10, 15 and 20 the host reads ``x[0]`` as a Python float, then reads
it once more at the end (nothing launched in between).

* hostarray: ``prg.affine(n, x)`` (``ha.Program``), ``float(x[0])``;
* CuPy (when installed): an ``ElementwiseKernel``, ``float(d[0])``;
* pyopencl.array: the same OpenCL kernel source as hostarray, ``float(d[0].get())``;
* cl: plain pyopencl, ``enqueue_copy`` of 4 bytes (the OpenCL driver's floor).

Every value read, and the whole array after the last run, is checked against numpy's
closed form ``x_k = 2**k (x_0 + 1) - 1`` (exact in float32 for these values).  For
hostarray the ``ha.stats()`` deltas of one run (publishes, acquires, bytes) are recorded.
Medians of ``--repeat`` runs after one warm-up, each library in the same process; the table
breaks each time into device, PCIe and host (see ``benchmarks/_peers.py``).

    python3 benchmarks/bench_iterative.py [--device opencl:0:0] [--sizes 1MiB,64MiB,1GiB]
                                          [--repeat 5] [--link copied] [--json PATH]
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from _peers import Workload, main, x0

STEPS, READ_EVERY = 20, 5


def prepare(lib: Any, x: Any, n: int) -> None:
    lib.init(x, n)  # the device writes the whole array: the data is on the device


def run(lib: Any, x: Any, n: int) -> list[float]:
    reads = []
    for step in range(1, STEPS + 1):
        lib.affine(x, n)
        if step % READ_EVERY == 0:
            reads.append(lib.read0(x))
    reads.append(lib.read0(x))  # the final read
    return reads


def closed_form(a: np.ndarray, k: int) -> np.ndarray:
    return ((a.astype(np.float64) + 1) * 2.0**k - 1).astype(np.float32)


def expected(n: int) -> list[float]:
    first = x0(1)
    reads = [float(closed_form(first, k)[0]) for k in range(READ_EVERY, STEPS + 1, READ_EVERY)]
    return reads + reads[-1:]


WORKLOAD = Workload(
    key="iterative",
    title=f"iterative: {STEPS} kernels x = 2x + 1, host reads x[0] every {READ_EVERY} and "
          f"at the end",
    prepare=prepare,
    run=run,
    expected=expected,
    final=lambda n: closed_form(x0(n), STEPS),
    kernels=lambda n: [n] * STEPS,
    peer_bytes=lambda n: 4 * (STEPS // READ_EVERY + 1),
    minimum_bytes=lambda n: 4 * (STEPS // READ_EVERY),
    legend=[("run", f"the data on the device; {STEPS} x (kernel x = 2x + 1 over the whole "
                    f"array), float(x[0]) after every {READ_EVERY}th, float(x[0]) once more")],
    params={"steps": STEPS, "read_every": READ_EVERY, "dtype": "float32"},
)

if __name__ == "__main__":
    sys.exit(main(WORKLOAD, __doc__))
