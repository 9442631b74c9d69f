"""The API reference (``docs/api.md``) documents every public member of ``HostPtrArray``,
``Program``, ``Kernel``, ``Launch`` and ``Stats``: each has an entry (an anchor
``hostarray.CLASS.NAME``) in the built page, or is described in its class's own entry (a
numpydoc ``Attributes`` section), or, for the few members that are not methods
(``__hash__ = None``), is named in the page's source.  A member added to one of these
classes without documentation fails here.
"""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hostarray as ha
from hostarray import kernels

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
API_PAGE = DOCS / "api.md"

# Bookkeeping names of the classes that are not part of their interface.
NOT_INTERFACE = {
    "__module__", "__doc__", "__slots__", "__weakref__", "__dict__", "__init__",
    "__annotations__", "__qualname__", "__firstlineno__", "__static_attributes__",
    "__dataclass_fields__", "__dataclass_params__", "__match_args__", "__orig_bases__",
    "__parameters__", "__annotate_func__", "__annotations_cache__",
    "__replace__",  # dataclasses add it on Python >= 3.13 (copy.replace); api.md says so
}
CLASSES = {"HostPtrArray": ha.HostPtrArray, "Kernel": kernels.Kernel,
           "Launch": kernels.Launch, "Stats": ha.Stats, "Program": kernels.Program}


def _instance_attributes(cls: type) -> set[str]:
    """Public attributes ``cls.__init__`` sets (``self.name = ...``), read from the source."""
    try:
        src = inspect.getsource(cls.__init__)
    except (OSError, TypeError):
        return set()
    tree = ast.parse(src.lstrip() if src[0].isspace() else src)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and \
                isinstance(node.value, ast.Name) and node.value.id == "self" and \
                not node.attr.startswith("_"):
            names.add(node.attr)
    return names


def public_members(cls: type) -> set[str]:
    """Every public member: public names (inherited ones too), instance attributes set in
    ``__init__``, and the special methods the class defines itself."""
    names = {n for n in dir(cls) if not n.startswith("_")}
    names |= _instance_attributes(cls)
    names |= {n for n in vars(cls) if n.startswith("__") and n.endswith("__")} - NOT_INTERFACE
    return names


def test_member_lists_are_what_the_classes_have() -> None:
    arr = public_members(ha.HostPtrArray)
    # the groups the page covers: the standard's attributes, operators, numpy protocol,
    # numpy-style methods, Python protocols
    for name in ("shape", "mT", "to_device", "__add__", "__rpow__", "__imatmul__", "__array__",
                 "__array_ufunc__", "__dlpack__", "sum", "reshape", "real", "strides",
                 "__getitem__", "__setitem__", "__iter__", "__reduce__", "__hash__"):
        assert name in arr, name
    assert {"__call__", "name", "program", "device", "args"} <= public_members(kernels.Kernel)
    assert {"event", "kernel", "device", "wait", "done"} <= public_members(kernels.Launch)
    assert {"publishes", "bytes_moved", "__eq__"} <= public_members(ha.Stats)
    assert {"device", "source", "kernel_names", "__getattr__"} <= public_members(kernels.Program)


@pytest.fixture(scope="module")
def api_html(tmp_path_factory: pytest.TempPathFactory) -> str:
    for mod in ("sphinx", "furo", "myst_parser", "numpydoc"):
        pytest.importorskip(mod, reason="the docs extra is not installed (pip install -e .[docs])")
    tmp = tmp_path_factory.mktemp("docs")
    out = tmp / "html"
    r = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                        "-d", str(tmp / "doctrees"), str(DOCS), str(out)],
                       capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert r.returncode == 0, f"sphinx-build failed:\n{r.stderr[-6000:]}\n{r.stdout[-2000:]}"
    return (out / "api.html").read_text(encoding="utf-8")


def _class_block(html: str, cls: str) -> str:
    """The HTML of ``cls``'s own entry: from its anchor to the next entry of another class
    or the next top-level object."""
    start = html.index(f'id="hostarray.{cls}"')
    nxt = re.compile(r'id="hostarray\.(?!' + re.escape(cls) + r'[."])')
    m = nxt.search(html, start + 1)
    return html[start:m.start() if m else len(html)]


@pytest.mark.parametrize("cls", sorted(CLASSES))
def test_every_public_member_is_in_the_reference(cls: str, api_html: str) -> None:
    anchors = set(re.findall(r'id="hostarray\.' + cls + r'\.([^"]+)"', api_html))
    block = _class_block(api_html, cls)
    source = API_PAGE.read_text(encoding="utf-8")
    missing = []
    for name in sorted(public_members(CLASSES[cls])):
        if name in anchors:
            continue
        # a numpydoc Attributes entry of the class (Launch.event, Stats.publishes)
        if re.search(r"<strong>" + re.escape(name) + r"(?:, [^<]*)?</strong>", block):
            continue
        # not a method (``__hash__ = None``): named in the page's text
        if getattr(CLASSES[cls], name, ...) is None and f"`{name}`" in source:
            continue
        missing.append(name)
    assert not missing, f"{cls} members missing from docs/api.md: {missing}"


def test_documented_entries_exist(api_html: str) -> None:
    """The other way round: no entry documents a member the class no longer has."""
    stale = []
    for cls, klass in CLASSES.items():
        members = public_members(klass) | {"__replace__"}
        for name in re.findall(r'id="hostarray\.' + cls + r'\.([^"]+)"', api_html):
            if name not in members:
                stale.append(f"{cls}.{name}")
    assert not stale, f"docs/api.md documents members that do not exist: {stale}"


def test_kernel_call_reference_is_complete(api_html: str) -> None:
    start = api_html.index('id="hostarray.Kernel.__call__"')
    entry = api_html[start:api_html.index('id="hostarray.Kernel.name"', start)]
    text = re.sub(r"<[^>]+>", "", entry)
    for part in ("Parameters", "global_size", "local_size", "Returns", "Launch", "Raises",
                 "BadLaunch", "NotHostBacked", "Refused", "LaunchFailed"):
        assert part in text, part
    # and the page has a runnable example of a launch (run by tests/tooling/test_docs.py)
    assert "launch = k(y.shape, 2.0, x, y)" in API_PAGE.read_text(encoding="utf-8")


# -- Stats.__repr__ as docs/api.md gives it --------------------------------------------------------

@pytest.mark.device
def test_stats_repr_documented_fields() -> None:
    # docs/api.md: Stats.__repr__ is ``Stats(publishes=..., ..., launches=...)``; the device
    # counters are part of the repr now, so the documentation is stale (or vice versa)
    doc = (ROOT / "docs" / "api.md").read_text()
    r = repr(ha.stats())
    if "device_ops=" in r:
        assert "device_ops=" in doc.split("Stats.__repr__")[1].split(".. py:method")[0]
