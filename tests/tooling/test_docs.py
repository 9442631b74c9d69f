"""The documentation builds without a warning and every example in it runs.

* ``sphinx-build -W --keep-going -b html docs <tmp>``: warnings are errors.
* the docstring examples of every hostarray module, with doctest
  (``ELLIPSIS | NORMALIZE_WHITESPACE``);
* the ```` ```python ```` blocks of ``docs/*.md`` and ``README.md``, each page in
  a fresh interpreter, its blocks in order in one namespace: a block of
  ``>>>`` lines is checked as a doctest, any other block is executed (its
  ``assert`` statements are the checks).

Run one page by hand with ``python3 tests/tooling/test_docs.py docs/quickstart.md``.
"""

from __future__ import annotations

import doctest
import importlib
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
_FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


def code_blocks(path: Path) -> list[tuple[int, str]]:
    """``(line number, source)`` of every ```` ```python ```` block in a Markdown file."""
    text = path.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in _FENCE.finditer(text)]


MISSING_EXIT = 77  # a page needs an optional package (an extra) that is not installed


def _missing_optional(exc: BaseException) -> str | None:
    """The name of a missing third-party module, if that is what ``exc`` is."""
    if isinstance(exc, ModuleNotFoundError) and exc.name and exc.name.split(".")[0] not in (
            "hostarray", "numpy", "pyopencl"):
        return exc.name
    return None


class _Runner(doctest.DocTestRunner):
    """A doctest runner that notes examples failing on a missing optional package."""

    def __init__(self, **kw: object) -> None:
        super().__init__(optionflags=FLAGS, **kw)
        self.missing: set[str] = set()

    def report_unexpected_exception(self, out, test, example, exc_info) -> None:  # noqa: ANN001
        name = _missing_optional(exc_info[1])
        if name:
            self.missing.add(name)
        super().report_unexpected_exception(out, test, example, exc_info)


def run_page(path: Path) -> int:
    """Run a page's blocks in order in one namespace; return the number of failures, or
    :data:`MISSING_EXIT` when a block needs an optional package that is not installed
    (the blocks after it are not run: they build on it)."""
    namespace: dict[str, object] = {"__name__": f"docs_{path.stem.replace('-', '_')}"}
    parser = doctest.DocTestParser()
    failures = 0
    for line, src in code_blocks(path):
        where = f"{path.name}:{line}"
        if src.lstrip().startswith(">>>"):
            test = parser.get_doctest(src, namespace, where, str(path), line - 1)
            runner = _Runner()
            result = runner.run(test, clear_globs=False)
            if runner.missing:
                print(f"MISSING {sorted(runner.missing)} at {where}")
                return failures or MISSING_EXIT
            failures += result.failed
        else:
            try:
                exec(compile(src, where, "exec"), namespace)
            except Exception as e:
                name = _missing_optional(e)
                if name:
                    print(f"MISSING {name!r} at {where}")
                    return failures or MISSING_EXIT
                import traceback

                print(f"--- the example at {where} failed:", file=sys.stderr)
                traceback.print_exc()
                failures += 1
    return failures


if __name__ == "__main__":
    codes = [run_page(Path(p)) for p in sys.argv[1:]]
    sys.exit(0 if not any(codes) else MISSING_EXIT if all(c in (0, MISSING_EXIT) for c in codes)
             else 1)


import pytest  # noqa: E402  (the runner above must work without pytest)

import hostarray  # noqa: E402

PAGES = sorted(p for p in [*DOCS.glob("*.md"), ROOT / "README.md"] if p.exists()
               and code_blocks(p))


def _module_names() -> list[str]:
    names = ["hostarray"]
    for m in pkgutil.walk_packages(hostarray.__path__, "hostarray."):
        names.append(m.name)
    return sorted(names)


@pytest.mark.slow
def test_docs_build_without_warnings(tmp_path: Path) -> None:
    for mod in ("sphinx", "furo", "myst_parser", "numpydoc"):
        pytest.importorskip(mod, reason="the docs extra is not installed (pip install -e .[docs])")
    out = tmp_path / "html"
    r = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                        "-d", str(tmp_path / "doctrees"), str(DOCS), str(out)],
                       capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert r.returncode == 0, f"sphinx-build failed:\n{r.stderr[-6000:]}\n{r.stdout[-2000:]}"
    assert not r.stderr.strip(), f"sphinx-build wrote warnings:\n{r.stderr[-6000:]}"
    # the generated pages hold what they are generated from
    coverage = (out / "array-api.html").read_text(encoding="utf-8")
    assert "all functions and methods" in coverage and "vector_norm" in coverage
    assert "runs on the device" in coverage and "float16, complex on host" in coverage
    compute = (out / "device-compute.html").read_text(encoding="utf-8")
    assert "functions the device path computes" in compute and "logaddexp" in compute
    refusals = (out / "hostptr.html").read_text(encoding="utf-8")
    assert "ha.empty(...)" in refusals and "alignment" in refusals
    assert (out / "_images" / "coherence.svg").exists() or (out / "_static" / "coherence.svg"
                                                            ).exists()


def test_device_column_follows_the_registry() -> None:
    """The coverage table's "runs on the device" column and the device-compute page's table
    are what the device path's modules register (hostarray._compute.DEVICE_FUNCTIONS)."""
    pytest.importorskip("sphinx", reason="the docs extra is not installed")
    from hostarray._compute import device_functions, elementwise

    funcs = device_functions()
    assert set(elementwise.EXPRESSIONS) <= set(funcs)
    assert funcs["pow"].startswith("integer array exponents")
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        import hostarray_docs as ext
    finally:
        sys.path.pop(0)
    on = ext.device_functions()
    assert on["add"] == funcs["add"] and on["HostPtrArray.__iadd__"] == funcs["add"]
    assert "HostPtrArray.__matmul__" not in on or "matmul" in funcs
    rows, present = ext._coverage_rows({"add": "(x1, x2, /)", "arange": "()", "nope": "()"},
                                       lambda n: getattr(hostarray, n, None), {}, "", on)
    assert present == 2
    assert [r[3] for r in rows] == ["yes (float16, complex on host)", "no", "no"]


@pytest.mark.device
@pytest.mark.parametrize("module", _module_names())
def test_docstring_examples(module: str) -> None:
    try:
        mod = importlib.import_module(module)
    except ImportError as e:  # an optional dependency of that one module
        pytest.skip(f"{module} needs a package that is not installed: {e}")
    finder = doctest.DocTestFinder(exclude_empty=True)
    report: list[str] = []
    failed = 0
    missing: set[str] = set()
    for test in finder.find(mod, module):  # objects defined in this module only
        runner = _Runner()
        result = runner.run(test, out=report.append)
        if runner.missing:  # the rest of that docstring builds on the missing package
            missing |= runner.missing
        else:
            failed += result.failed
    assert failed == 0, "".join(report)
    if missing:
        pytest.skip(f"examples in {module} need {sorted(missing)}, not installed "
                    f"(pip install -e .[interop])")


@pytest.mark.device
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_examples(page: Path, cl_device: object) -> None:
    # a fresh interpreter per page: pages set environment variables (SCIPY_ARRAY_API)
    # and global configuration (scikit-learn's array_api_dispatch) before importing
    r = subprocess.run([sys.executable, __file__, str(page)], capture_output=True, text=True,
                       timeout=600, cwd=ROOT, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                           [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])})
    if r.returncode == MISSING_EXIT:
        pytest.skip(f"{page.name} needs a package that is not installed: "
                    f"{r.stdout.strip().splitlines()[-1]} (pip install -e .[interop])")
    assert r.returncode == 0, f"examples in {page.name} failed:\n{r.stdout[-6000:]}\n" \
                              f"{r.stderr[-6000:]}"


def test_install_page_and_readme_state_what_the_install_script_installs() -> None:
    """Every package of every extra is named in docs/install.md's table, and the README,
    where the install command is given, names the test-only drivers it downloads too."""
    tomllib = pytest.importorskip("tomllib")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
        "project"]["optional-dependencies"]
    page = (DOCS / "install.md").read_text(encoding="utf-8")
    table = page.split("### What the script installs, and where", 1)[1].split("\n\n", 2)[1]
    row = table.splitlines()[2].lower()  # the Python packages' row
    spoken = {"myst-parser": "myst"}  # how the page names a package, where not by its name
    missing = []
    for extra, packages in extras.items():
        if extra == "bench":  # not installed by the script (HOSTARRAY_EXTRAS picks it)
            continue
        for spec in packages:
            name = re.split(r"[\[<>=!~ ;]", spec, maxsplit=1)[0].lower()
            if spoken.get(name, name) not in row:
                missing.append(f"{name} ({extra})")
    assert not missing, f"docs/install.md's table does not name {missing}"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = " ".join(readme.split("## Set up", 1)[1].split("\n## ", 1)[0].split())
    assert "test-only OpenCL drivers" in setup and "~/.cache/hostarray-ocl" in setup, setup
