"""Every public callable has a numpydoc reference entry (issue 24, 6): Parameters (each of
its parameters, by name), Returns, Raises where its own body raises, and Examples that
run.  The public names: ``hostarray.__all__``, ``hostarray.linalg``, ``hostarray.fft``,
``hostarray.hostptr``, ``hostarray.errors``, ``hostarray.dask``, and the public methods
of ``HostPtrArray``, ``Program``, ``Kernel`` (with ``__call__``) and ``Device``.

The examples run in ``tests/tooling/test_docs.py::test_docstring_examples`` (doctest, per
module); this test checks that doctest finds each one there, so none is skipped.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import inspect
import re
import sys
import textwrap
from typing import Any

import numpy as np
import pytest

import hostarray as ha
from hostarray import kernels

MODULES = ("hostarray", "hostarray.linalg", "hostarray.fft", "hostarray.hostptr",
           "hostarray.errors", "hostarray.dask")
CLASSES = (ha.HostPtrArray, kernels.Program, kernels.Kernel, ha.Device)
_HEADING = re.compile(r"^(\S[^\n]*)\n-{3,}\s*$", re.MULTILINE)


def public_callables() -> dict[str, Any]:
    """``{qualified name: object}`` of every public callable the reference covers."""
    out: dict[str, Any] = {}
    for name in MODULES:
        try:
            mod = importlib.import_module(name)
        except ImportError:  # hostarray.dask without dask: tests/interop covers it
            continue
        for n in mod.__all__:
            obj = getattr(mod, n)
            if callable(obj) and not inspect.ismodule(obj):
                out.setdefault(f"{name}.{n}", obj)
    for cls in CLASSES:
        for n in dir(cls):
            if n.startswith("_") and n != "__call__":
                continue
            static = inspect.getattr_static(cls, n)
            if isinstance(static, property) or not callable(getattr(cls, n)):
                continue
            if n == "__call__" and cls is not kernels.Kernel:
                continue
            out[f"{cls.__name__}.{n}"] = getattr(cls, n)
    return out


def sections(doc: str) -> dict[str, str]:
    """``{heading: body}`` of a numpydoc docstring (``doc`` already cleaned)."""
    found = list(_HEADING.finditer(doc))
    return {m.group(1).strip(): doc[m.end():found[i + 1].start() if i + 1 < len(found)
                                     else len(doc)] for i, m in enumerate(found)}


def _parameters(obj: Any) -> list[str] | None:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [p.name for p in sig.parameters.values() if p.name != "self"]


def _documented(body: str) -> set[str]:
    names: set[str] = set()
    for line in body.splitlines():
        if line and not line[0].isspace():
            head = line.split(" : ")[0]
            names |= {n.strip().lstrip("*") for n in head.split(",")}
    return names


def _own_raises(obj: Any) -> list[str]:
    """The exceptions ``obj``'s own body raises by name (``raise Name(...)``), not counting
    re-raises or raises in the functions it defines inside."""
    try:
        src = textwrap.dedent(inspect.getsource(obj))
    except (OSError, TypeError):
        return []
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return []
    fn = tree.body[0] if tree.body else None
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    names: list[str] = []
    todo = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            f = node.exc.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(
                f, ast.Attribute) else None
            if name and name[:1].isupper():
                names.append(name)
        todo.extend(ast.iter_child_nodes(node))
    return names


def problems(qual: str, obj: Any) -> list[str]:
    """What ``obj``'s docstring lacks."""
    doc = inspect.getdoc(obj) or ""
    have = sections(doc)
    out: list[str] = []
    examples = have.get("Examples", "")
    if ">>>" not in examples:
        out.append("Examples")
    if inspect.isclass(obj):
        if "Parameters" not in have and "Attributes" not in have:
            out.append("Parameters or Attributes")
        return out
    params = _parameters(obj)
    if params:
        if "Parameters" not in have:
            out.append("Parameters")
        else:
            lacking = {p for p in params} - _documented(have["Parameters"])
            if lacking and not (set(params) <= {"args", "kwargs"}):
                out.append(f"Parameters for {sorted(lacking)}")
    try:
        ret = inspect.signature(obj).return_annotation
    except (TypeError, ValueError):
        ret = inspect.Signature.empty
    if ret not in (None, "None") and "Returns" not in have and "Yields" not in have:
        out.append("Returns")
    if _own_raises(obj) and "Raises" not in have:
        out.append(f"Raises (it raises {sorted(set(_own_raises(obj)))})")
    return out


def test_every_public_callable_has_its_sections() -> None:
    names = public_callables()
    assert len(names) > 250, len(names)  # the namespace, its extensions, the methods
    missing = {q: p for q, o in sorted(names.items()) if (p := problems(q, o))}
    assert not missing, "docstrings without their numpydoc sections:\n" + "\n".join(
        f"  {q}: {', '.join(p)}" for q, p in missing.items())


# The callables with nothing to raise of their own (no argument they could refuse, or one
# they take whatever it is): every other public callable has a Raises section.
RAISE_NOTHING = {
    "HostPtrArray.conj", "HostPtrArray.conjugate", "HostPtrArray.copy", "HostPtrArray.tolist",
    "hostarray.__array_namespace_info__", "hostarray.clear_pool", "hostarray.dask.device_task",
    "hostarray.dask.to_worker_device", "hostarray.device_compute_threshold", "hostarray.devices",
    "hostarray.errors.error_message", "hostarray.errors.refusal_message",
    "hostarray.hostptr.error_message", "hostarray.hostptr.refusal_message",
    "hostarray.reset_stats", "hostarray.stats",
}


def test_every_public_callable_says_what_it_raises() -> None:
    # (71 had no Raises section: numpy's refusals passed on were not said)
    lacking = {q for q, o in public_callables().items()
               if not inspect.isclass(o) and "Raises" not in sections(inspect.getdoc(o) or "")}
    assert lacking == RAISE_NOTHING, (f"without a Raises section: {sorted(lacking - RAISE_NOTHING)}"
                                      f"; with one now: {sorted(RAISE_NOTHING - lacking)}")


@pytest.mark.parametrize(("call", "error"), [
    (lambda x: ha.sum(x, axis=5), np.exceptions.AxisError),
    (lambda x: ha.mean(x, axis=(0, 0)), ValueError),
    (lambda x: ha.sort([1.0]), TypeError),
    (lambda x: ha.fft.fft(x, n=0), ValueError),
    (lambda x: ha.fft.fftn(x, axes=(5,)), IndexError),
    (lambda x: ha.zeros_like([1.0]), TypeError),
    (lambda x: ha.full_like(x, "a"), ValueError),
    (lambda x: ha.where(ha.asarray([True, False]), x, ha.asarray([1.0, 2.0, 3.0])), ValueError),
    (lambda x: ha.linalg.outer(x, x), ValueError),
    (lambda x: x.swapaxes(0, 5), np.exceptions.AxisError),
    (lambda x: x.item(), ValueError),
    (lambda x: ha.read([1]), TypeError),
    (lambda x: ha.hostptr.host_link([1], "opencl"), TypeError),
    (lambda x: ha.can_cast("x", np.float64), TypeError),
], ids=["sum", "mean", "sort", "fft", "fftn", "zeros_like", "full_like", "where", "outer",
        "swapaxes", "item", "read", "host_link", "can_cast"])
def test_the_raises_sections_say_what_happens(call: Any, error: type) -> None:
    x = ha.asarray(np.arange(6.0).reshape(2, 3))
    with pytest.raises(error):
        call(x)


def test_kernel_call_is_documented_in_full() -> None:
    doc = inspect.getdoc(kernels.Kernel.__call__) or ""
    have = sections(doc)
    for part in ("global_size", "local_size", "ha.read", "ha.write", "scalar", "Launch",
                 "BadLaunch", "queue"):
        assert part in doc, part
    assert {"Parameters", "Returns", "Raises", "Examples"} <= set(have), sorted(have)


def test_the_examples_are_found_where_they_run() -> None:
    """tests/tooling/test_docs.py runs each module's doctests: every public callable's
    Examples are among those of the module that defines it."""
    found: dict[str, set[str]] = {}
    lost = []
    finder = doctest.DocTestFinder(exclude_empty=True)
    for qual, obj in public_callables().items():
        target = obj.__func__ if inspect.ismethod(obj) else obj
        module = getattr(target, "__module__", None)
        if module is None or module not in sys.modules:
            lost.append(qual)
            continue
        if module not in found:
            found[module] = {t.name for t in finder.find(sys.modules[module], module)
                             if t.examples}
        name = f"{module}.{target.__qualname__}"
        if name not in found[module]:
            lost.append(f"{qual} ({name})")
    assert not lost, f"examples doctest does not find (so they never run): {lost}"


def test_the_checks_fail_where_they_should() -> None:
    def bare(x: int, *, axis: int = 0) -> int:
        """Something.

        Parameters
        ----------
        x : int
            A number.
        """
        if x < 0:
            raise ValueError("negative")
        return x

    got = problems("bare", bare)
    assert "Examples" in got and "Returns" in got and "Parameters for ['axis']" in got, got
    assert any(p.startswith("Raises") for p in got), got


@pytest.mark.parametrize("name", ["add", "sum", "asarray", "linalg.inv", "fft.fft"])
def test_generated_sections_name_the_signature(name: str) -> None:
    obj: Any = ha
    for part in name.split("."):
        obj = getattr(obj, part)
    have = sections(inspect.getdoc(obj) or "")
    assert set(_parameters(obj) or ()) <= _documented(have["Parameters"])
    assert have["Returns"].strip()


def test_every_elementwise_function_says_what_it_raises() -> None:
    # (their bodies are one shared wrapper: the raises are numpy's and the wrapper's)
    from hostarray._api.elementwise import TABLE

    lacking = [name for name, *_ in TABLE
               if "Raises" not in sections(inspect.getdoc(getattr(ha, name)) or "")]
    assert not lacking, lacking
    x = ha.asarray([1.0, 2.0])
    with pytest.raises(TypeError):  # as the section says: a floating bitwise operand
        ha.bitwise_and(x, x)
    with pytest.raises(ValueError):  # operands that do not broadcast
        ha.add(x, ha.asarray([1.0, 2.0, 3.0]))
