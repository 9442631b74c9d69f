"""Whether pyopencl imports here, and, where it does not, what to tell the user.

hostarray imports pyopencl only when OpenCL is first needed (device discovery,
kernels).  Where that import fails (pyopencl missing, or a build for numpy 1.x
under numpy 2: "numpy.core.multiarray failed to import"), the host still works;
:func:`import_problem` then says why there is no OpenCL and how to fix it, for
``ha.device("opencl")`` and the ``hostarray`` command to report instead of "no
working OpenCL device was found" or a traceback.  This module never imports
pyopencl at import time.
"""

from __future__ import annotations

import contextlib
import io
import re
import threading

__all__ = ["PYOPENCL_FLOOR", "import_problem", "record_import_error"]

#: The oldest pyopencl hostarray works with (``pyproject.toml``'s floor; a test keeps them equal).
PYOPENCL_FLOOR = "2026.1.4"

# How an extension built for another numpy fails to import: numpy's message for a module built
# for numpy 1.x under numpy 2 (pyopencl before 2024.2.7), and pyopencl 2024.1's own.
_ABI = re.compile(r"numpy\.core\.multiarray failed to import|_ARRAY_API|compiled using NumPy"
                  r"|initialization failed|numpy\.dtype size changed")

_LOCK = threading.Lock()
_ERROR: list[ImportError | None] = []  # [] until the import was tried, then [error or None]


def record_import_error(error: ImportError) -> None:
    """Keep the error importing the OpenCL backend raised (its first import only)."""
    with _LOCK:
        if not _ERROR:
            _ERROR.append(error)


def import_problem(*, quiet: bool = False) -> str | None:
    """Why the OpenCL backend can't be loaded, with the fix; ``None`` where pyopencl imports.

    Tries the import once per process where no attempt was made yet (``quiet``: with
    what numpy writes to ``stderr`` about a module built for numpy 1.x held back, for
    the command line, which says it in one sentence instead).

    Examples
    --------
    >>> from hostarray.backends._pyopencl import import_problem
    >>> import_problem() is None  # pyopencl imports here
    True
    """
    with _LOCK:
        if not _ERROR:
            held = io.StringIO()
            try:
                with contextlib.redirect_stderr(held) if quiet else contextlib.nullcontext():
                    from . import opencl  # noqa: F401
            except ImportError as e:
                _ERROR.append(e)
            else:
                _ERROR.append(None)
        error = _ERROR[0]
    return None if error is None else describe(error)


def describe(error: ImportError) -> str:
    """The sentence for ``error``: what failed, why where it is known, and the fix."""
    floor = f"pyopencl>={PYOPENCL_FLOOR}"
    if isinstance(error, ModuleNotFoundError) and error.name == "pyopencl":
        return (f"pyopencl is not installed, so there is no OpenCL device; install it with "
                f"pip install '{floor}'")
    text = f"{type(error).__name__}: {error}"
    installed = _installed("pyopencl")
    numpy = _installed("numpy")
    said = f"pyopencl cannot be imported ({text})"
    if installed is not None and _older(installed, PYOPENCL_FLOOR):
        why = f"pyopencl {installed} is installed; hostarray needs {PYOPENCL_FLOOR} or later"
        if numpy is not None and _ABI.search(text):
            why += f" (and it was built for another numpy than numpy {numpy} here)"
        return f"{said}: {why}; upgrade it with pip install --upgrade '{floor}'"
    if _ABI.search(text):
        why = ("the installed pyopencl was built for another numpy" +
               (f" than numpy {numpy} here" if numpy is not None else ""))
        return (f"{said}: {why}; reinstall it with pip install --force-reinstall "
                f"--no-cache-dir '{floor}'")
    return f"{said}; reinstall it with pip install --force-reinstall '{floor}'"



def _installed(name: str) -> str | None:
    """The version of distribution ``name`` installed here (not imported), or ``None``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _older(version: str, floor: str) -> bool:
    """Whether ``version`` is before ``floor``, comparing their leading numbers."""
    def key(v: str) -> tuple[int, ...]:
        return tuple(int(m) for m in re.findall(r"\d+", v.split("+")[0])[:4])

    try:
        return key(version) < key(floor)
    except ValueError:
        return False
