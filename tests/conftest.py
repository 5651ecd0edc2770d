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
# Under pytest-xdist (-n), each worker process inherits the session's folder and takes a folder
# of its own inside it, so no test sees another worker's cache entries.
_SESSION_CACHE = "RESPC_TEST_SESSION_CACHE"
if "RESPC_CACHE_DIR" not in os.environ:
    _CACHE = tempfile.mkdtemp(prefix="respc-test-cache-")
    os.environ["RESPC_CACHE_DIR"] = os.environ[_SESSION_CACHE] = _CACHE
    atexit.register(shutil.rmtree, _CACHE, True)
elif os.environ.get("PYTEST_XDIST_WORKER") and os.environ["RESPC_CACHE_DIR"] == os.environ.get(_SESSION_CACHE):
    os.environ["RESPC_CACHE_DIR"] = tempfile.mkdtemp(prefix=os.environ["PYTEST_XDIST_WORKER"] + "-", dir=os.environ[_SESSION_CACHE])
