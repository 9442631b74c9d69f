"""Issue 24's points where only a GPU can show them: device kinds (``ha.device("gpu")``), the
default-device block, ``show_config``, the CLI's widths, build-failure texts on the GPU
driver's compiler, pyopencl's call form refused.  Prints ``ok``/``FAIL`` a line; exit 1 if
any failed.  Set the machine up as docs/gpu.md says, then

    python3 benchmarks/gpu_new_user_check.py
"""
import contextlib
import io
import json
import os
import subprocess
import sys

import numpy as np

import hostarray as ha
from hostarray import hostptr

failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + (f": {detail}" if detail else ""))
    if not ok:
        failures.append(name)


def cli(*args, env=None):
    r = subprocess.run([sys.executable, "-m", "hostarray", *args], capture_output=True, text=True,
                       env={**os.environ, **(env or {})}, timeout=300)
    return r


opencl = [d for d in ha.devices() if d.framework == "opencl"]
print("devices:", [(str(d), d.type, d.name) for d in opencl])
gpus = [d for d in opencl if "GPU" in d.type]
if not gpus:
    sys.exit("no OpenCL GPU here: this check is for a machine with one (hostarray devices)")
g = gpus[0]
for spec in ("gpu", "opencl:gpu", "opencl:gpu:0", "GPU", " opencl : gpu : 0 "):
    try:
        check(f"device({spec!r}) is the GPU", ha.device(spec) is g)
    except Exception as e:  # noqa: BLE001
        check(f"device({spec!r})", False, repr(e))
for spec in ("opencl:gpu:9", "opencl:cpu", "gpu:1:2"):
    try:
        ha.device(spec)
        check(f"device({spec!r}) refused", False, "was accepted")
    except hostptr.InvalidDevice as e:
        print("   ", spec, "->", e)
        check(f"device({spec!r}) refused, listing the devices", str(g) in str(e), str(e))

before = ha.default_device()
with ha.default_device("gpu") as d:
    x = ha.asarray(np.arange(10.0))
    z = ha.zeros(5)
    check("default_device block: creation on the GPU", x.device is g and z.device is g and d is g)
    check("info().default_device() in the block",
          ha.__array_namespace_info__().default_device() is g)
    y = (x * 2 + 1).sum()
    check("compute in the block", float(y) == float((np.arange(10.0) * 2 + 1).sum()))
check("default restored", ha.default_device() is before)
try:
    with ha.default_device("gpu"):
        raise KeyError("boom")
except KeyError:
    pass
check("default restored after an exception", ha.default_device() is before)

buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    ha.show_config()
text = buf.getvalue()
print(text)
check("show_config names the GPU", g.name in text or str(g) in text)

r = cli("devices")
print(r.stdout, r.stderr)
check("hostarray devices exit 0", r.returncode == 0, r.stderr)
check("hostarray devices fits 100 columns", all(len(line) <= 100 for line in r.stdout.splitlines()))
check("hostarray devices lists gpu aliases", "opencl:gpu" in r.stdout)
r = cli("devices", "--json")
by = {e["device"]: e for e in json.loads(r.stdout)["devices"]}
check("devices --json aliases", "gpu" in by[str(g)]["aliases"], str(by[str(g)]))
r = cli("demo", env={"HOSTARRAY_DEVICE": "gpu"})
print(r.stdout[-3000:], r.stderr[-2000:])
check("HOSTARRAY_DEVICE=gpu hostarray demo", r.returncode == 0, r.stderr[-500:])
check("demo fits 100 columns", all(len(line) <= 100 for line in r.stdout.splitlines()))
r = cli("demo", "--device", "opencl:cpu")
print(r.stderr)
check("demo --device opencl:cpu refused (exit 2) naming the GPU", r.returncode == 2 and str(g) in
      " ".join(r.stderr.split()), r.stderr)
r = cli("devices", env={"HOSTARRAY_DEVICE": "bogus"})
print(r.returncode, r.stdout[-300:], r.stderr)

# a build failure on NVIDIA's compiler: source line with a caret, no temp path, no stderr noise
code = r'''
import hostarray as ha
from hostarray import hostptr
try:
    ha.Program("__kernel void k(__global float *x) {\n  x[0] = undefined_name;\n}\n", device="gpu")
except hostptr.BuildFailed as e:
    print(e)
'''
r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
print(r.stdout, "stderr:", repr(r.stderr))
check("build failure: caret under the line", "undefined_name" in r.stdout and "^" in r.stdout,
      r.stdout)
check("build failure: no temp path", "/tmp/" not in r.stdout, r.stdout)
check("build failure: nothing on stderr", r.stderr == "", r.stderr)

prg = ha.Program("__kernel void scale(__global float *x, float a) { x[get_global_id(0)] *= a; }",
                 device=g)
x = ha.asarray(np.ones(8, np.float32), device=g)
try:
    prg.scale(ha.hostptr.queue(g), (8,), None, x, np.float32(2))
    check("pyopencl call form refused", False)
except Exception as e:  # noqa: BLE001
    print("   pyopencl form ->", type(e).__name__, e)
    check("pyopencl call form: says no queue", "queue" in str(e), str(e))
prg.scale(8, x, np.float32(3))
check("kernel on the GPU", np.array_equal(np.asarray(x), np.full(8, 3, np.float32)))
print("stats:", ha.stats())
print("FAILURES:", failures)
sys.exit(1 if failures else 0)
