"""Makes tests/interop's ``serve_factory`` fixture (a real ``groupcoord serve`` subprocess)
available to the member tests, without a second copy of it.

tests/ is not a package, so the interop conftest is loaded from its path.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

_INTEROP_CONFTEST = Path(__file__).resolve().parent.parent / "interop" / "conftest.py"
_spec = importlib.util.spec_from_file_location("_interop_serve_fixtures", _INTEROP_CONFTEST)
assert _spec is not None and _spec.loader is not None
_interop = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_interop)

serve_factory = _interop.serve_factory
ServerProcess = _interop.ServerProcess

__all__ = ["ServerProcess", "serve_factory"]
