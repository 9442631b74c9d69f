"""``__array_namespace_info__()`` (inspection API)."""

from __future__ import annotations

import numpy as np
import pytest

import hostarray as ha

from . import strategies as strat


@pytest.fixture(scope="module")
def info():
    f = getattr(ha, "__array_namespace_info__", None)
    if f is None:
        pytest.fail("hostarray.__array_namespace_info__ is missing")
    return f()


def test_capabilities(info) -> None:
    caps = info.capabilities()
    assert isinstance(caps, dict)
    assert caps["boolean indexing"] is True
    assert caps["data-dependent shapes"] is True
    assert "max dimensions" in caps
    md = caps["max dimensions"]
    assert md is None or (isinstance(md, int) and md >= 32)  # numpy's limit is 64


def test_devices_and_default(info) -> None:
    devs = info.devices()
    assert isinstance(devs, tuple) and len(devs) >= 1
    assert ha.device("cpu") in devs
    assert info.default_device() in devs
    for d in devs:
        x = ha.zeros(3, device=d)
        assert x.device == d


def test_default_dtypes(info) -> None:
    for dev in (None, *info.devices()):
        dd = info.default_dtypes(device=dev)
        assert set(dd) == {"real floating", "complex floating", "integral", "indexing"}
        assert dd["real floating"] == ha.float64
        assert dd["complex floating"] == ha.complex128
        assert dd["integral"] == ha.int64
        assert dd["indexing"] == ha.int64
        assert ha.asarray([1.0]).dtype == dd["real floating"]
        assert ha.asarray([1]).dtype == dd["integral"]


@pytest.mark.parametrize("kind,names", [
    (None, strat.ALL), ("bool", strat.BOOL), ("signed integer", strat.SIGNED),
    ("unsigned integer", strat.UNSIGNED), ("integral", strat.INTEGER),
    ("real floating", strat.REAL_FLOAT), ("complex floating", strat.COMPLEX),
    ("numeric", strat.NUMERIC), (("bool", "real floating"), strat.BOOL + strat.REAL_FLOAT),
])
def test_dtypes(info, kind, names) -> None:
    got = info.dtypes(kind=kind) if kind is not None else info.dtypes()
    assert isinstance(got, dict)
    assert set(got) == set(names)
    for n in names:
        assert got[n] == np.dtype(n) and got[n] == getattr(ha, n)


def test_dtypes_per_device(info) -> None:
    for d in info.devices():
        assert set(info.dtypes(device=d)) <= set(strat.ALL)
        assert "float32" in info.dtypes(device=d)
