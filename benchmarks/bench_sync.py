"""Publish/acquire bandwidth vs enqueue_copy (pinned, pageable) and the second host read.

On a mapped link (a discrete GPU) publish + acquire should reach >= 90 % of
the pinned copy bandwidth measured in the same run, and a second host read
with no launch in between must move 0 bytes in microseconds.  Also checks
that a publish maps with ``CL_MAP_WRITE_INVALIDATE_REGION`` and never reads
device data back.

    python3 benchmarks/bench_sync.py [--max-size 4GiB] [--device opencl:0:0]
"""

from _common import run

if __name__ == "__main__":
    run(("checks", "sync"), __doc__.splitlines()[0])
