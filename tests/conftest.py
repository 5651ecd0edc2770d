"""Test-session setup shared by every test module."""

import os
import tempfile

# Keep the on-disk compile cache of this test session out of the user's cache folder.
os.environ.setdefault("RESPC_CACHE_DIR", tempfile.mkdtemp(prefix="respc-test-cache-"))
