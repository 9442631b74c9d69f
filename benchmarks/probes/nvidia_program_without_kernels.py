"""Probe: a program with no kernels (a crash seen on NVIDIA's OpenCL, H100, 2026-12-08).

``tests/kernels/test_kernels.py::test_a_kernel_the_program_lacks_is_named_with_those_it_has``
crashed its pytest worker there; it passes on PoCL.  Each step prints before it starts, so
the last line printed names the call that crashed.  Run it twice: as is, and with
``HOSTARRAY_PROGRAM_CACHE=off`` (the binary cache asks the driver for the program's binary).

    python3 -X faulthandler benchmarks/probes/nvidia_program_without_kernels.py
"""

from __future__ import annotations

import faulthandler

import hostarray as ha

faulthandler.enable()
dev = ha.device("opencl")
print("building on", dev, flush=True)
p = ha.Program("int twice(int a) { return 2 * a; }\n", device=dev)
print("built; kernel_names:", flush=True)
print(p.kernel_names, flush=True)
print("asking for a kernel it lacks:", flush=True)
try:
    _ = p.twice
except AttributeError as e:
    print("AttributeError:", e, flush=True)
print("done", flush=True)
