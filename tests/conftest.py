"""Test-session setup shared by every test module."""

import os
import sys
import tempfile
from pathlib import Path

# Shared test helpers (compare.py) are imported by name from this folder.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

# Keep the on-disk compile cache of this test session out of the user's cache folder.
os.environ.setdefault("RESPC_CACHE_DIR", tempfile.mkdtemp(prefix="respc-test-cache-"))
