"""The release number, in a module of its own so that any module can record it without importing the package."""

__version__ = "0.1.0"  # keep equal to pyproject.toml's [project] version (tests/test_version.py checks it)
