"""Probe: the steps of a wrong value the scale state machine found on NVIDIA (H100, mapped
link, 2026-12-08): a write-only fill of the sub-buffer view ``[384:1020]``, then an add
through the host handle of the overlapping view ``[640:773]``, then a read of the whole
array (``tests/reliability/test_state_machine_scale.py::test_state_machine_at_scale`` read
stale bytes at 384..391).  16 variants (write-only or not, the add through the host or the
device handle, published first or not, with or without the add), each against numpy.

    python3 benchmarks/probes/nvidia_subbuffer_replay.py
"""

from __future__ import annotations

import numpy as np

import hostarray as ha
from hostarray import hostptr

SRC = r"""
__kernel void fill(__global float *x, const float v) { x[get_global_id(0)] = v; }
__kernel void add(__global float *x, const float v) { x[get_global_id(0)] += v; }
"""
dev = ha.device("opencl")
print(dev, dev.link, "alignment", dev.alignment)
prg = ha.Program(SRC, device=dev)


def scenario(write_only: bool, add_via: str, publish_first: bool, add: bool) -> str:
    base = np.arange(1024, dtype=np.float32) - 20
    x = ha.asarray(base, device=dev, copy=True)
    handles = {"cpu": x.to_device("cpu"), "dev": x}
    model = base.copy()
    if publish_first:
        hostptr.publish_host_writes(x, dev)
    view = x[384:1020]
    prg.fill(636, ha.write(view) if write_only else view, 29.0)
    model[384:1020] = 29
    if add:
        prg.add(133, handles[add_via][640:773], -3.0)
        model[640:773] += -3
    got = np.array(handles["cpu"], copy=True)
    bad = np.flatnonzero(got != model)
    if not len(bad):
        return "OK"
    return f"WRONG at {bad[:6]} (got {got[bad[:4]]}, numpy {model[bad[:4]]}; {len(bad)} differ)"


for write_only in (True, False):
    for add_via in ("cpu", "dev"):
        for publish_first in (True, False):
            for add in (True, False):
                name = (f"write_only={write_only} add_via={add_via} "
                        f"publish_first={publish_first} add={add}")
                print(f"{name:58s} {scenario(write_only, add_via, publish_first, add)}")
print(ha.stats())
