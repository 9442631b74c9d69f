"""Run every benchmark: checks, attach, round trip, sync, laziness, then dispatch overhead.

    python3 benchmarks/run_all.py [--max-size 256MiB] [--device opencl:0:0]
                                  [--json results.json] [--plot results.png] [--no-dispatch]

The first five run in this process through :mod:`hostarray.bench`; dispatch
overhead (namespace ops against numpy and array_api_strict) is
``benchmarks/bench_dispatch.py``, run as its own process.  On the CPU device
here the default 256 MiB takes a few minutes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from _common import measure, parser

HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--plot", default=None, metavar="PNG", help="time-against-size plot")
    p.add_argument("--no-dispatch", action="store_true", help="skip bench_dispatch.py")
    args = p.parse_args()
    t0 = time.perf_counter()
    result = measure(args, ("checks", "attach", "roundtrip", "sync", "laziness"))
    if args.plot:
        from hostarray.bench import plot
        plot(result, args.plot)
        print(f"plot written to {args.plot}", file=sys.stderr)
    rc = 0
    if not args.no_dispatch:
        print("\ndispatch overhead (benchmarks/bench_dispatch.py)", flush=True)
        rc = subprocess.call([sys.executable, os.path.join(HERE, "bench_dispatch.py")])
    print(f"\nall benchmarks: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    sys.exit(rc)
