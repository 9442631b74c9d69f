"""numpy-style code using a reduction's result as a number (issue 22's results rule): a full
reduction numpy spells (``np.sum(x)``, ``x.max()``) is a 0-d HostPtrArray, on the host and on
the device; the idioms numpy's scalars serve must keep working with it."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator

import numpy as np
import pytest

import hostarray as ha
from tests._device_helpers import device_newest


@pytest.fixture(params=["host", "device"])
def arrays(request: pytest.FixtureRequest, cl_device: ha.Device
           ) -> Iterator[tuple[ha.HostPtrArray, ha.HostPtrArray]]:
    """(float64, int32) arrays on the host, or device-newest with the device path taken."""
    f = np.linspace(-1.0, 2.0, 7)
    i = np.arange(1, 8, dtype=np.int32)
    if request.param == "host":
        yield ha.asarray(f), ha.asarray(i)
        return
    old = ha.set_device_compute_threshold(0)
    try:
        yield device_newest(f, cl_device), device_newest(i, cl_device)
    finally:
        ha.set_device_compute_threshold(old)


def test_reductions_are_0d_arrays(arrays) -> None:
    f, i = arrays
    for r in (np.sum(f), np.mean(f), f.max(), np.std(f, ddof=1), np.argmax(i), i.prod(),
              np.add.reduce(f), np.all(i > 0)):
        assert type(r) is ha.HostPtrArray and r.shape == () and r.device == f.device


def test_python_numbers_idioms(arrays) -> None:
    f, i = arrays
    s, m, n = np.sum(i), np.mean(f), np.max(f)
    assert math.isclose(m, 0.5) and math.sqrt(s) == math.sqrt(28) and math.floor(n) == 2
    assert statistics.mean([float(m), float(n)]) == 1.25
    assert sorted([np.sum(i), np.min(i), np.max(i)], key=float) == [1, 7, 28]
    assert max(float(m), float(n)) == 2.0 and abs(np.min(f)) == 1.0
    assert [10, 20, 30, 40, 50, 60, 70, 80][np.argmax(i)] == 70  # an index
    assert "abcdefgh"[: np.max(i)] == "abcdefg" and list(range(np.min(i), 3)) == [1, 2]
    assert f"{m:.2f}|{s:d}|{n}" == "0.50|28|2.0" and "%s" % s == "28"  # noqa: UP031
    assert s + 0.5 == 28.5 and 2 ** np.min(i) == 2 and divmod(s, 5) == (5, 3)
    assert np.isclose(m, 0.5) and np.isfinite(n) and np.float64(m) == 0.5
    assert s.item() == 28 and isinstance(s.item(), int) and np.asarray(m).item() == 0.5
    assert bool(np.any(i > 6)) and not bool(np.all(i > 6))
    if np.sum(f) > 0:  # a condition
        pass
    else:
        pytest.fail("np.sum(f) > 0 is False")


def test_0d_arrays_are_unhashable_as_numpys_arrays_are(arrays) -> None:
    # the rule's cost, as for CuPy's 0-d arrays and numpy's own: a dict key needs float(s)
    f, _ = arrays
    with pytest.raises(TypeError):
        hash(np.sum(f))
    assert {float(np.sum(f)): 1}[3.5] == 1


def test_in_place_operators_on_a_result_rebind_as_on_numpy_scalars(arrays) -> None:
    """numpy's scalars are immutable: ``s += 1`` rebinds ``s`` (promoted as numpy promotes)
    and leaves every other name bound to the result as it was."""
    f, i = arrays
    a = b = np.max(i)
    a += 1
    assert (int(a), int(b)) == (8, 7)
    best = i.max()
    prev = best
    best -= 3
    assert (int(best), int(prev)) == (4, 7)
    s = np.sum(i)
    s += 0.5  # int32 + a Python float: float64, as numpy's int32 scalar gives
    assert float(s) == 28.5 and s.dtype == ha.float64
    s = np.add.reduce(i)
    s /= 2
    assert float(s) == 14.0
    tot = i[:0].sum()
    for _ in range(3):
        tot += f.mean()
    assert math.isclose(float(tot), 1.5)
    t = ha.sum(i)  # the namespace's 0-d array is an array: in-place writes it
    u = t
    t += 1
    assert int(u) == 29


def test_an_out_array_passed_to_a_reduction_stays_an_array(arrays) -> None:
    """The user's 0-d ``out=`` (by keyword or in its position) keeps writing in place."""
    f, _ = arrays
    for call in (lambda o: np.sum(f, out=o), lambda o: np.sum(f, None, None, o)):
        o = ha.zeros((), dtype=ha.float64, device=f.device)
        alias = o
        assert call(o) is o
        o += 1
        assert o is alias and float(alias) == float(np.sum(np.asarray(f))) + 1
