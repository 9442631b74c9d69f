"""``hostarray._introspect``: the coherence state of an array as one record, for tests,
read without changing anything."""

from __future__ import annotations

import numpy as np
import pytest

import hostarray as ha
from hostarray._introspect import State, host_current, state

TWICE = "__kernel void twice(__global float *x) { x[get_global_id(0)] *= 2; }"


def test_a_host_array_is_current_on_the_host_alone() -> None:
    x = ha.zeros(8, dtype=ha.float32)
    st = state(x)
    assert isinstance(st, State) and st == state(x)
    assert (st.host_stale, st.host_exclusive, st.host_current) == (False, True, True)
    assert st.devices == {} and st.stale == () and st.segments == ((0, 32, ("host",)),)
    assert st.inflight == st.escapes == st.raw_blocks == () and st.unreported == 0
    assert not st.escaped and host_current(x) and host_current(x, 0, 32)


def test_a_raw_view_is_an_escape() -> None:
    x = ha.zeros(8, dtype=ha.float32)
    raw = np.asarray(x)
    assert state(x).escaped and state(x).escapes == ((0, 32),)
    del raw
    assert not state(x).escaped


@pytest.mark.device
def test_a_kernels_writes_stay_on_its_device_until_read(cl_device: ha.Device) -> None:
    x = ha.asarray(np.arange(8, dtype=np.float32), device=cl_device)
    prg = ha.Program(TWICE, device=cl_device)
    prg.twice(x.shape, x).wait()
    before = ha.stats()
    st = state(x)
    assert st.host_stale and not st.host_exclusive and not st.host_current
    assert st.devices == {str(cl_device): True} and st.stale == ((0, 32),)
    assert st.segments == ((0, 32, (str(cl_device),)),)
    part = state(x[2:4])  # the bytes the view covers, in the allocation's numbering
    assert part.stale == ((8, 16),) and part.segments == st.segments
    assert not host_current(x) and not host_current(x, 8, 16)
    assert ha.stats() == before  # looking moved nothing
    assert float(x[3]) == 6.0  # an element read acquires that element's bytes alone
    dev = str(cl_device)
    st = state(x)
    assert st.host_stale and st.stale == ((0, 12), (16, 32)) and state(x[3]).host_current
    assert st.segments == ((0, 12, (dev,)), (12, 16, ("host", dev)), (16, 32, (dev,)))
    assert ha.stats().acquires == before.acquires + 1
