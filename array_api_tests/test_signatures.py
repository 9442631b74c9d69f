"""Every name of the 2025.12 standard exists in hostarray with the specified signature.

The expected names and signatures are ``spec_signatures.py`` (written from the spec); a
signature matches when parameter names, kinds (positional-only / keyword-only / variadic) and
defaults are equal. Annotations are not compared.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import hostarray as ha
from hostarray import HostPtrArray

from . import spec_signatures as spec


def _expected(text: str) -> inspect.Signature:
    namespace: dict = {}
    exec(f"def f{text}: pass", namespace)  # the spec's text, parsed by Python itself
    return inspect.signature(namespace["f"])


def _shape(sig: inspect.Signature) -> list[tuple]:
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


def _same_default(a: object, b: object) -> bool:
    if a is inspect.Parameter.empty or b is inspect.Parameter.empty:
        return a is b
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b
    return type(a) is type(b) and a == b if isinstance(a, str) else a == b


def assert_signature(obj: object, text: str, where: str) -> None:
    try:
        got = inspect.signature(obj)
    except (TypeError, ValueError) as e:
        pytest.fail(f"{where}: no inspectable signature ({e}); expected {text}")
    want = _expected(text)
    g, w = _shape(got), _shape(want)
    ok = len(g) == len(w) and all(
        gn == wn and gk == wk and _same_default(gd, wd)
        for (gn, gk, gd), (wn, wk, wd) in zip(g, w))
    assert ok, f"{where}{got} differs from the spec's {where}{text}"


def _cases(section: dict[str, str], prefix: str):
    return [pytest.param(name, text, id=f"{prefix}{name}") for name, text in section.items()]


@pytest.mark.parametrize("name,text", _cases(spec.all_main_functions(), ""))
def test_main_namespace_function(name: str, text: str) -> None:
    f = getattr(ha, name, None)
    assert f is not None, f"hostarray.{name} is missing"
    assert callable(f)
    assert_signature(f, text, f"hostarray.{name}")


@pytest.mark.parametrize("name,text", _cases(spec.LINALG, "linalg."))
def test_linalg_function(name: str, text: str) -> None:
    linalg = getattr(ha, "linalg", None)
    assert linalg is not None, "hostarray.linalg is missing"
    f = getattr(linalg, name, None)
    assert f is not None, f"hostarray.linalg.{name} is missing"
    assert_signature(f, text, f"hostarray.linalg.{name}")


@pytest.mark.parametrize("name,text", _cases(spec.FFT, "fft."))
def test_fft_function(name: str, text: str) -> None:
    fft = getattr(ha, "fft", None)
    assert fft is not None, "hostarray.fft is missing"
    f = getattr(fft, name, None)
    assert f is not None, f"hostarray.fft.{name} is missing"
    assert_signature(f, text, f"hostarray.fft.{name}")


@pytest.mark.parametrize("name,text", _cases(spec.INFO, "info."))
def test_info_method(name: str, text: str) -> None:
    info = ha.__array_namespace_info__()
    m = getattr(info, name, None)
    assert m is not None and callable(m), f"__array_namespace_info__().{name} is missing"
    assert_signature(m, text, f"info.{name}")


@pytest.mark.parametrize("name,text", _cases(spec.ARRAY_METHODS, "array."))
def test_array_method(name: str, text: str) -> None:
    m = getattr(HostPtrArray, name, None)
    assert m is not None and callable(m), f"HostPtrArray.{name} is missing"
    assert_signature(m, text, f"HostPtrArray.{name}")


@pytest.mark.parametrize("name", spec.ARRAY_ATTRIBUTES)
def test_array_attribute(name: str) -> None:
    x = ha.asarray(np.arange(6.0).reshape(2, 3))
    assert isinstance(getattr(type(x), name, None), property), \
        f"HostPtrArray.{name} should be a property"
    getattr(x, name)  # readable on a 2-D array (T and mT both defined there)


@pytest.mark.parametrize("name", spec.DTYPES)
def test_dtype_object(name: str) -> None:
    dt = getattr(ha, name, None)
    assert dt is not None, f"hostarray.{name} is missing"
    assert dt == np.dtype(name)
    assert ha.asarray([0], dtype=dt).dtype == dt


def test_constants() -> None:
    for name in spec.CONSTANTS:
        assert hasattr(ha, name), f"hostarray.{name} is missing"
    assert type(ha.e) is float and ha.e == math.e
    assert type(ha.pi) is float and ha.pi == math.pi
    assert type(ha.inf) is float and ha.inf == math.inf
    assert type(ha.nan) is float and math.isnan(ha.nan)
    assert ha.newaxis is None


def test_spec_list_counts() -> None:
    # The section sizes the standard's pages give: a typo in spec_signatures shows here.
    sizes = {k: len(v) for k, v in spec.MAIN_NAMESPACE.items()}
    assert sizes == {"creation": 16, "elementwise": 67, "data_type_functions": 6, "indexing": 2,
                     "linear_algebra": 4, "manipulation": 15, "searching": 6, "sets": 5,
                     "sorting": 2, "statistical": 9, "utility": 3, "inspection": 1}
    assert len(spec.LINALG) == 25 and len(spec.FFT) == 14
