"""The package version, in one place the code can read without package metadata (a source
checkout on ``PYTHONPATH`` has none). ``tests/test_version.py`` keeps it equal to
``pyproject.toml`` and ``Cargo.toml``."""

__version__ = "0.1.0"
