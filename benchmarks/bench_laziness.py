"""Laziness: a Jacobi solver that checks its residual on the host every few iterations.

Bytes moved (from ``ha.stats()``) and time of hostarray's lazy policy, of an
eager "sync after every launch" policy (hostarray's explicit
``publish_host_writes``/``acquire_device_writes`` around every launch) and of
a hand-written pyopencl program that copies only what the data dependencies
require (the minimum).  On a shared link (a CPU device) hostarray moves no
bytes at all, so the solver also runs on a forced copied link
(``HOSTARRAY_LINK=copied`` semantics) to show the bytes.

    python3 benchmarks/bench_laziness.py [--max-size 1GiB] [--device opencl:0:0]
"""

from _common import run

if __name__ == "__main__":
    run(("laziness",), __doc__.splitlines()[0])
