"""One script for a GPU machine: check everything, measure everything, write it under $OUT.

Made for an NVIDIA H200 reached through NVIDIA's OpenCL driver, usable on any machine
with an OpenCL GPU.  docs/gpu.md ("Running on a GPU") says how to make the GPU visible
to OpenCL (NVIDIA's driver needs an ICD file) and what these numbers mean; run
``hostarray devices`` first: the GPU must be listed there.

    python3 benchmarks/gpu_run.py [--quick] [--max-size 4GiB] [--tests]

Sizes are read as written (GB = 10**9 bytes, GiB = 2**30).  The files go to the
folder named by the environment variable OUT, else ``gpu_out/`` in the repository.

Writes (at most 8 files): ``log.txt`` (everything), ``devices.txt``
(``hostarray devices`` and ``--json``), ``demo.txt`` (``hostarray demo``),
``bench.txt`` (the tables), ``bench.json`` (the numbers; those of
``bench_iterative.py``, ``bench_half.py`` and ``bench_launch.py`` under ``"iterative"``,
``"half"`` and ``"launch"``), ``bench.png`` (the plot), ``peers.txt`` (the tables of
``bench_iterative.py`` and ``bench_half.py``: hostarray against CuPy and pyopencl.array,
1 MiB to 1 GiB, and of ``bench_launch.py``: the cost of one launch against raw pyopencl
and CuPy; each run as its own process), ``pytest.txt`` (the device tests, with ``--tests``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
OUT = os.environ.get("OUT") or os.path.join(ROOT, "gpu_out")
LOG = None  # log.txt under OUT, opened by main() (not on --help)
T0 = time.perf_counter()


def say(msg: str) -> None:
    line = f"[{time.perf_counter() - T0:7.1f}s] {msg}"
    print(line, flush=True)
    print(line, file=LOG, flush=True)


def sh(cmd: list[str], outfile: str | None = None, timeout: int = 300) -> str:
    say("$ " + " ".join(cmd))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
        text = p.stdout + (("\n[stderr]\n" + p.stderr) if p.stderr.strip() else "")
        text += f"\n[exit {p.returncode}]\n"
    except subprocess.TimeoutExpired as e:
        text = f"{e.stdout or ''}\n[timed out after {timeout} s]\n"
    except OSError as e:
        text = f"[could not run: {e}]\n"
    print(text, file=LOG, flush=True)
    if outfile:
        with open(os.path.join(OUT, outfile), "a") as f:
            f.write("$ " + " ".join(cmd) + "\n" + text + "\n")
    return text


@contextlib.contextmanager
def step(name: str):
    say(f"== {name}")
    try:
        yield
    except Exception:
        say(f"!! {name} failed:\n{traceback.format_exc()}")


def main() -> int:
    global LOG
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Setting up the GPU (NVIDIA: the OpenCL ICD file) and reading the results: "
               "docs/gpu.md and docs/performance.md. Files go to $OUT, else gpu_out/.")
    p.add_argument("--quick", action="store_true",
                   help="small sizes, few repeats (~2 min): --max-size 64MiB, --repeat 3")
    p.add_argument("--max-size", default=None, metavar="SIZE",
                   help="largest size measured (default 4GiB; GB = 10**9 bytes, GiB = 2**30)")
    p.add_argument("--repeat", type=int, default=None, help="timed runs per median (default 5)")
    p.add_argument("--tests", action="store_true", help="also run the device tests")
    p.add_argument("--device", default=None,
                   help="OpenCL device (default: the first GPU that hostarray devices lists)")
    args = p.parse_args()
    from hostarray.bench import parse_size

    try:
        max_size = parse_size(args.max_size or ("64MiB" if args.quick else "4GiB"))
    except ValueError as e:
        p.error(f"argument --max-size: {e}")
    repeat = args.repeat or (3 if args.quick else 5)
    os.makedirs(OUT, exist_ok=True)
    LOG = open(os.path.join(OUT, "log.txt"), "w")

    with step("environment"):
        sh(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,pcie.link.gen.current,"
            "pcie.link.width.current", "--format=csv"])
        sh([sys.executable, "-c", "import sys, numpy, pyopencl; print(sys.version); "
            "print('numpy', numpy.__version__, 'pyopencl', pyopencl.VERSION_TEXT)"])
        sh(["bash", "-c", "grep -E 'MemTotal|MemAvailable' /proc/meminfo; nproc; "
            "echo OCL_ICD_VENDORS=$OCL_ICD_VENDORS; cat $OCL_ICD_VENDORS/*.icd"])

    import numpy as np

    import hostarray as ha

    with step("devices"):
        sh([sys.executable, "-m", "hostarray", "devices"], "devices.txt")
        sh([sys.executable, "-m", "hostarray", "devices", "--json"], "devices.txt")
    gpus = [d for d in ha.devices() if d.framework == "opencl" and "GPU" in d.type.upper()]
    dev = ha.device(args.device) if args.device else (gpus[0] if gpus else None)
    if dev is None:
        say(f"no OpenCL GPU found (docs/gpu.md says how to make one visible); left out: "
            f"{ha._devices.left_out_devices()}")
        return 2
    cd = dev._cl_device
    say(f"device {dev}: {dev.name}, link {dev.link}, alignment {dev.alignment} B, max alloc "
        f"{dev.max_alloc / 2**30:.1f} GiB, global mem {cd.global_mem_size / 2**30:.1f} GiB, "
        f"unified {dev.host_unified}, driver {cd.driver_version}, {cd.version}")

    with step("correctness: kernel on a mapped array, laziness counters"):
        x = ha.asarray(np.arange(1 << 20, dtype=np.float32), device=dev)
        prg = ha.Program("__kernel void twice(__global float *x) "
                         "{ x[get_global_id(0)] *= 2; }", device=dev)
        ha.reset_stats()
        prg.twice(x.shape, x)
        first = np.array(x)
        s1 = ha.stats()
        ok2 = np.array_equal(np.array(x), first)
        s2 = ha.stats()
        ok = np.array_equal(first, 2 * np.arange(1 << 20, dtype=np.float32))
        say(f"twice: correct {ok}, second read same {ok2}; after launch+read: {s1}; "
            f"second read moved "
            f"{s2.bytes_moved - s1.bytes_moved} bytes; link {ha.hostptr.host_link(x, dev)}")

    with step("demo"):
        sh([sys.executable, "-m", "hostarray", "demo", "--device", str(dev)], "demo.txt")

    from hostarray.bench import GiB, collect, format_size, format_tables, plot

    result: dict = {}
    parts = [("checks", None), ("sync", None), ("roundtrip", None), ("laziness", None),
             ("attach", min(max_size, GiB))]
    for part, cap in parts:
        with step(f"bench {part} up to {format_size(cap or max_size)}, medians of {repeat}"):
            r = collect(str(dev), cap or max_size, repeat, parts=(part,))
            result.update(r)
            with open(os.path.join(OUT, "bench.json"), "w") as f:
                json.dump(result, f, indent=1, default=float)
            say("\n" + format_tables(r))
    # hostarray against CuPy and pyopencl.array, each script in its own process (CUDA and
    # OpenCL contexts apart from this one); tables to peers.txt, numbers into bench.json
    peer_sizes = [s for s in ("1MiB", "64MiB", "1GiB") if parse_size(s) <= max_size]
    for key, script in (("iterative", "bench_iterative.py"), ("half", "bench_half.py")):
        with step(f"{script}: hostarray vs CuPy and pyopencl.array, {','.join(peer_sizes)}, "
                  f"medians of {repeat}"):
            path = os.path.join(tempfile.mkdtemp(), f"{key}.json")
            sh([sys.executable, os.path.join("benchmarks", script), "--device", str(dev),
                "--sizes", ",".join(peer_sizes), "--repeat", str(repeat), "--json", path],
               "peers.txt", timeout=600)
            with open(path) as f:
                result[key] = json.load(f)
            with open(os.path.join(OUT, "bench.json"), "w") as f:
                json.dump(result, f, indent=1, default=float)
    with step(f"bench_launch.py: one kernel launch, hostarray vs raw pyopencl and CuPy, 4 KiB "
              f"and 1 MiB, medians of {repeat} batches"):
        path = os.path.join(tempfile.mkdtemp(), "launch.json")
        sh([sys.executable, os.path.join("benchmarks", "bench_launch.py"), "--device", str(dev),
            "--repeat", str(repeat), "--profile", "--json", path], "peers.txt", timeout=600)
        with open(path) as f:
            result["launch"] = json.load(f)
        with open(os.path.join(OUT, "bench.json"), "w") as f:
            json.dump(result, f, indent=1, default=float)
    with step("tables and plot"):
        with open(os.path.join(OUT, "bench.txt"), "w") as f:
            f.write(format_tables(result) + "\n")
        plot(result, os.path.join(OUT, "bench.png"))

    if args.tests:
        with step("device tests"):
            # tests/interop needs dask and friends, which a GPU image may lack
            sh([sys.executable, "-m", "pytest", "-q", "-m", "device", "tests",
                "--ignore=tests/interop", "--continue-on-collection-errors",
                "-p", "no:cacheprovider", "-o", "addopts=-ra"], "pytest.txt", timeout=240)
    say("done")
    buf = io.StringIO()
    print(format_tables(result), file=buf)
    print(buf.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
