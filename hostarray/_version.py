"""hostarray's version, in one place (``hostarray.__version__``; pyproject.toml keeps the same)."""

__version__ = "0.1.0"
