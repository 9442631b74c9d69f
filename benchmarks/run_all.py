"""Run every benchmark: checks, attach, round trip, sync, laziness, dispatch overhead, peers.

    python3 benchmarks/run_all.py [--max-size 256MiB] [--device opencl:0:0]
                                  [--json results.json] [--plot results.png] [--no-dispatch]
                                  [--no-peers]

The first five run in this process through :mod:`hostarray.bench`; dispatch
overhead (namespace ops against numpy and array_api_strict) is
``benchmarks/bench_dispatch.py``, run as its own process; then
``bench_iterative.py`` and ``bench_half.py`` (hostarray against CuPy, when installed,
and pyopencl.array) at 1 MiB, 64 MiB and 1 GiB up to ``--max-size``, and
``bench_launch.py`` (the cost of one kernel launch against raw pyopencl and CuPy, 4 KiB and
1 MiB), each its own process (with ``--json PATH``, their numbers go to ``PATH`` with
``-iterative``, ``-half`` and ``-launch`` before the extension).  On the CPU device here the
default 256 MiB takes a few minutes.
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
    p.add_argument("--no-peers", action="store_true",
                   help="skip bench_iterative.py, bench_half.py and bench_launch.py (vs CuPy, "
                        "pyopencl)")
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
    if not args.no_peers:
        sizes = [s for s, n in (("1MiB", 2**20), ("64MiB", 2**26), ("1GiB", 2**30))
                 if n <= args.max_size]
        for name in ("iterative", "half"):
            print(f"\nhostarray vs CuPy and pyopencl.array (benchmarks/bench_{name}.py)",
                  flush=True)
            cmd = [sys.executable, os.path.join(HERE, f"bench_{name}.py"),
                   "--sizes", ",".join(sizes or [str(args.max_size)]),
                   "--repeat", str(args.repeat)]
            if args.device:
                cmd += ["--device", args.device]
            if args.json:
                stem, ext = os.path.splitext(args.json)
                cmd += ["--json", f"{stem}-{name}{ext or '.json'}"]
            rc = subprocess.call(cmd) or rc
        print("\nlaunch cost: hostarray vs raw pyopencl and CuPy (benchmarks/bench_launch.py)",
              flush=True)
        cmd = [sys.executable, os.path.join(HERE, "bench_launch.py"), "--repeat", str(args.repeat)]
        if args.device:
            cmd += ["--device", args.device]
        if args.json:
            stem, ext = os.path.splitext(args.json)
            cmd += ["--json", f"{stem}-launch{ext or '.json'}"]
        rc = subprocess.call(cmd) or rc
    print(f"\nall benchmarks: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    sys.exit(rc)
