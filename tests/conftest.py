"""Test-session setup shared by every test module."""

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

# Shared test helpers (compare.py) are imported by name from this folder.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

# Keep the on-disk compile cache of this test session out of the user's cache folder, and
# remove it when the session ends (subprocesses of the tests inherit it through the environment).
if "RESPC_CACHE_DIR" not in os.environ:
    _CACHE = tempfile.mkdtemp(prefix="respc-test-cache-")
    os.environ["RESPC_CACHE_DIR"] = _CACHE
    atexit.register(shutil.rmtree, _CACHE, True)
