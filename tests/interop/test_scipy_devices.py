"""Which device SciPy's results land on, for inputs attached to an OpenCL device: the table
of ``docs/interop.md`` ("Which device SciPy's results are on") is read and every row checked
against the installed SciPy, so the page and SciPy can't drift apart silently."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import hostarray as ha

pytest.importorskip("scipy")

from ._scipy_calls import CALLS as _CALLS  # noqa: E402
from ._scipy_calls import DATA  # noqa: E402

pytestmark = pytest.mark.usefixtures("scipy_array_api")

PAGE = Path(__file__).resolve().parents[2] / "docs" / "interop.md"
OUTCOMES = ("device", "default", "numpy")  # the table's three result columns, in order

CALLS = {"scipy." + k: f for k, f in _CALLS.items()}  # the names the page uses


def documented() -> dict[str, str]:
    """``{"scipy.module.function": "device" | "default" | "numpy"}`` from the page's table."""
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("### Which device SciPy's results are on"):]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`scipy"):
            continue
        module = cells[0].strip("`")
        for outcome, cell in zip(OUTCOMES, cells[1:]):
            for name in re.findall(r"`([^`]+)`", cell):
                key = f"{module}.{name}"
                assert key not in rows, f"{key} is in the table twice"
                rows[key] = outcome
    return rows


DOCUMENTED = documented()
# rows a newer SciPy changed, as the page says under its table: name -> (version, outcome)
CHANGED = {"scipy.integrate.simpson": ((1, 18), "device")}


def test_the_page_names_each_changed_row() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for name, (version, _) in CHANGED.items():
        assert f"SciPy {version[0]}.{version[1]} changed" in text and f"`{name}`" in text


def _scipy_version() -> tuple[int, int]:
    import scipy

    major, minor = scipy.__version__.split(".")[:2]
    return int(major), int(minor)


def test_the_table_lists_every_function_checked_here() -> None:
    assert len(DOCUMENTED) >= 70
    assert set(DOCUMENTED) == set(CALLS), (sorted(set(DOCUMENTED) ^ set(CALLS)))


@pytest.mark.device
@pytest.mark.parametrize("name", sorted(CALLS))
def test_result_device_is_as_documented(name: str, cl_device: ha.Device) -> None:
    f = CALLS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.asarray(f(DATA))
        got = f({k: ha.asarray(v.copy(), device=cl_device) for k, v in DATA.items()})
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-7, atol=1e-12)
    outcome = DOCUMENTED[name]
    if name in CHANGED and _scipy_version() >= CHANGED[name][0]:
        outcome = CHANGED[name][1]
    if outcome == "numpy":
        assert not isinstance(got, ha.HostPtrArray), f"{name} now returns a HostPtrArray on " \
                                                     f"{got.device}: update docs/interop.md"
        return
    assert isinstance(got, ha.HostPtrArray), type(got)
    where = cl_device if outcome == "device" else ha.default_device()
    assert got.device == where, (f"{name} returned its result on {got.device}, the page "
                                 f"says {outcome} ({where}): update docs/interop.md")
