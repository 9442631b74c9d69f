"""Types a checker understands: user code type-checks with mypy, with no ``Any`` leaking.

The sample below uses the namespace, the operators, the ndarray-style methods,
kernels and stats; mypy must report no error but the one deliberate unknown
name, and none of the ``reveal_type`` results may be ``Any``.  The
declarations of what hostarray builds at import (``scripts/gen_stubs.py``)
must match their tables.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

mypy_api = pytest.importorskip("mypy.api")

SAMPLE = textwrap.dedent('''\
    import hostarray as ha

    x = ha.asarray([1.0, 2.0])
    m = ha.asarray([[1.0, 2.0], [3.0, 4.0]])
    reveal_type(x)
    reveal_type(ha.add(x, 1))
    reveal_type(ha.sum(x))
    reveal_type(ha.linalg.matmul(m, m))
    reveal_type(ha.sin(x))
    reveal_type(ha.clip(x, 0.0, 1.0))
    reveal_type(ha.zeros(3))
    reveal_type(ha.reshape(x, (2, 1)))
    reveal_type(ha.unique_all(x))
    reveal_type(ha.float32)
    reveal_type(x + x)
    reveal_type(x + 1)
    reveal_type(2.0 * x)
    reveal_type(m @ m)
    reveal_type(-x)
    reveal_type(abs(x))
    reveal_type(x < 1)
    reveal_type(x == x)
    reveal_type(x ** 2)
    reveal_type(x.reshape(2, 1))
    reveal_type(x.reshape((2, 1)))
    reveal_type(x.sum())
    reveal_type(x.sum(axis=0))
    reveal_type(x.astype(ha.float32))
    reveal_type(x.T if x.ndim == 2 else x.mT)
    reveal_type(x.real)
    reveal_type(x.shape)
    reveal_type(x.dtype)
    reveal_type(x.device)
    reveal_type(x[0])
    reveal_type(x.__array_namespace__())
    x += 1
    prg = ha.Program("__kernel void twice(__global float *x) { x[get_global_id(0)] *= 2; }")
    reveal_type(prg)
    reveal_type(prg.twice)
    reveal_type(prg.twice(2, ha.readwrite(x)))
    s = ha.stats()
    reveal_type(s)
    reveal_type(s.publishes)
    reveal_type(s.bytes_moved)
    with ha.transfer_guard("log"):
        reveal_type(ha.set_transfer_guard("allow"))
    ha.no_such_function
    ''')
UNKNOWN_LINE = SAMPLE.splitlines().index("ha.no_such_function") + 1


def _mypy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str) -> tuple[str, int]:
    sample = tmp_path / "sample.py"
    sample.write_text(code)
    monkeypatch.setenv("MYPYPATH", str(ROOT))  # this checkout's hostarray, not an installed one
    out, err, status = mypy_api.run([
        "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(ROOT / ".mypy_cache"),
        "--no-error-summary", "--hide-error-context", "--show-error-codes", str(sample)])
    assert not err, err
    return out, status


def _is_any(t: str) -> bool:
    """Whether a revealed type is ``Any`` or a union with an ``Any`` member."""
    if t == "Any":
        return True
    if t.startswith("Union[") and t.endswith("]"):
        depth, parts, cur = 0, [], ""
        for ch in t[6:-1]:
            depth += ch == "["
            depth -= ch == "]"
            if ch == "," and depth == 0:
                parts.append(cur.strip())
                cur = ""
            else:
                cur += ch
        parts.append(cur.strip())
        return any(_is_any(p) for p in parts)
    return " | Any" in t or t.startswith("Any |")


@pytest.mark.slow
def test_user_code_type_checks_without_any(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    out, status = _mypy(tmp_path, monkeypatch, SAMPLE)
    revealed, errors = [], []
    for line in out.splitlines():
        m = re.match(r".*?sample\.py:(\d+): (note|error): (.*)$", line)
        if m is None:
            continue
        ln, kind, msg = int(m[1]), m[2], m[3]
        r = re.match(r'Revealed type is "(.*)"$', msg)
        if kind == "note" and r:
            revealed.append((ln, r[1]))
        elif kind == "error":
            errors.append((ln, msg))
    expected = SAMPLE.count("reveal_type(")
    assert len(revealed) == expected, out
    anys = [(ln, t) for ln, t in revealed if _is_any(t)]
    assert not anys, f"revealed as Any: {anys}"
    # the one deliberate error: an unknown namespace name is caught, not Any
    assert errors == [(UNKNOWN_LINE, 'Module has no attribute "no_such_function"  '
                                     '[attr-defined]')], out
    assert status == 1
    types = dict(revealed)
    line = {s: i + 1 for i, s in enumerate(SAMPLE.splitlines())}
    assert types[line["reveal_type(x + x)"]] == "hostarray._array.HostPtrArray"
    assert types[line["reveal_type(ha.add(x, 1))"]] == "hostarray._array.HostPtrArray"
    assert types[line["reveal_type(x.reshape(2, 1))"]] == "hostarray._array.HostPtrArray"
    assert types[line["reveal_type(prg.twice(2, ha.readwrite(x)))"]] == \
        "hostarray.kernels.Launch"
    assert types[line["reveal_type(s.publishes)"]] in ("int", "builtins.int")


def test_numpy_operands_and_sizes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the operators take numpy arrays and scalars (docs/api.md) and give a HostPtrArray; typed
    # without them, mypy fell back on numpy's reflected operator and said ``ndarray``
    code = textwrap.dedent('''\
        import numpy as np
        import hostarray as ha

        def f(x: ha.HostPtrArray, a: np.ndarray, i: np.int8, s: np.float32) -> None:
            reveal_type(x + a)
            reveal_type(x @ a)
            reveal_type(x < a)
            reveal_type(x * i)
            reveal_type(x ** s)
            x += a

        def g(k: ha.Kernel, x: ha.HostPtrArray, n: np.int64) -> None:
            reveal_type(k(n, x, local_size=(n,)))  # a launch size may be a numpy integer
        ''')
    out, status = _mypy(tmp_path, monkeypatch, code)
    revealed = re.findall(r'sample\.py:\d+: note: Revealed type is "(.*)"', out)
    assert revealed == ["hostarray._array.HostPtrArray"] * 5 + ["hostarray.kernels.Launch"], out
    assert status == 0, out


def test_wrong_use_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code = textwrap.dedent('''\
        import hostarray as ha

        x = ha.asarray([1.0])
        ha.add(x)
        ha.sin(x, x)
        x + "a"
        y: int = ha.sum(x)
        ''')
    out, status = _mypy(tmp_path, monkeypatch, code)
    lines = sorted({int(m) for m in re.findall(r"sample\.py:(\d+): error", out)})
    assert lines == [4, 5, 6, 7], out
    assert status == 1


def test_generated_declarations_are_current() -> None:
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_stubs.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_namespace_is_the_declared_one() -> None:
    import hostarray as ha

    assert len(ha.__all__) == len(set(ha.__all__))
    for name in ha.__all__:
        assert hasattr(ha, name), name
