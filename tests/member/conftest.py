"""Makes tests/interop's ``serve_factory`` fixture (a real ``groupcoord serve`` subprocess)
available to the member tests, without a second copy of it.

tests/ is not a package, so the interop conftest (and the ``serve_process`` module it
imports) is loaded from its directory.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_INTEROP = Path(__file__).resolve().parent.parent / "interop"
if str(_INTEROP) not in sys.path:
    sys.path.append(str(_INTEROP))
_spec = importlib.util.spec_from_file_location("_interop_serve_fixtures", _INTEROP / "conftest.py")
assert _spec is not None and _spec.loader is not None
_interop = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_interop)

serve_factory = _interop.serve_factory
ServerProcess = _interop.ServerProcess

__all__ = ["ServerProcess", "serve_factory"]
