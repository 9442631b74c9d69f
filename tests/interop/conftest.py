"""Ecosystem tests: real scikit-learn, SciPy, array-api-extra/compat and Dask.

SciPy reads ``SCIPY_ARRAY_API`` once, when it is first imported, and
scikit-learn's ``array_api_dispatch`` requires it.  This conftest is loaded
before any test module of this folder is imported (pytest collects the folders
of ``tests/`` in alphabetical order, and ``array``, ``coherence`` and
``device_compute``, collected before this one, import no SciPy), so setting it
here comes before any SciPy import.  It changes nothing for numpy inputs, so
the rest of the suite is unaffected.  If SciPy was imported earlier anyway
(an unusual selection of test paths), the SciPy/scikit-learn tests fail
with a message that says how to run them.
"""

from __future__ import annotations

import os
import sys

import pytest

os.environ.setdefault("SCIPY_ARRAY_API", "1")


def _scipy_array_api_enabled() -> bool:
    from scipy._lib._array_api import SCIPY_ARRAY_API

    return bool(SCIPY_ARRAY_API)


@pytest.fixture(scope="session")
def scipy_array_api() -> None:
    """Fails (with the fix) if SciPy was imported before SCIPY_ARRAY_API=1 was set."""
    if not _scipy_array_api_enabled():
        pytest.fail("SciPy was imported before tests/interop/conftest.py set "
                    "SCIPY_ARRAY_API=1 (scipy already loaded: "
                    f"{'scipy' in sys.modules}); run with SCIPY_ARRAY_API=1 in the "
                    "environment or run tests/interop on its own")
