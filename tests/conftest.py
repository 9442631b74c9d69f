"""Fixtures of ``tests/``: fresh transfer counters for every test.

The device fixture (``cl_device``), ``--thorough`` and the ``HOSTARRAY_REQUIRE_DEVICE``
session check are shared with ``array_api_tests/`` in the repository's root ``conftest.py``.
"""

from __future__ import annotations

import pytest

import hostarray as ha


@pytest.fixture(autouse=True)
def _fresh_stats() -> None:
    ha.reset_stats()
