"""Sphinx configuration of hostarray's documentation (furo, MyST, numpydoc)."""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# The package and the spec's name list (array_api_tests/) come from this checkout.
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))

import hostarray  # noqa: E402

project = "hostarray"
author = "hostarray contributors"
copyright = "2026, hostarray contributors"
release = hostarray.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "numpydoc",
    "hostarray_docs",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "README.md"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()

html_theme = "furo"
html_title = f"hostarray {release}"
html_static_path = ["_static"]
html_css_files = ["tables.css"]  # wide tables wrap and scroll within the page
pygments_style = "sphinx"
smartquotes = False  # keep "..." and quotes in messages exactly as the code prints them
