"""The test suite's tiers: without the test extra, modules that need an optional package skip
with a reason instead of failing at collection; the quick tier (``-m "not slow"``) leaves the
heavy modules out, and the full suite has them all."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
# modules that need an optional package at their top (transformers, hypothesis)
NEEDING = ["test_models.py", "test_validation.py", "test_openai.py", "test_differential.py", "test_decode.py"]


def _collect(*args: str, hide: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """``pytest --collect-only`` in a child process where the ``hide`` packages cannot be imported."""
    code = (
        "import sys\n"
        f"for name in {list(hide)!r}:\n"
        "    sys.modules[name] = None  # import fails as if it were not installed\n"
        "import pytest\n"
        f"sys.exit(pytest.main(['--collect-only', '-q', '-rs', '-p', 'no:cacheprovider', *{list(args)!r}]))\n"
    )
    # (no plugin autoload: hypothesis's pytest plugin would import what is hidden)
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"} if hide else None
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=HERE.parent, env=env, timeout=600)


def test_without_the_optional_packages_modules_skip_with_a_reason():
    done = _collect(*(str(HERE / name) for name in NEEDING), hide=("transformers", "hypothesis"))
    assert done.returncode in (0, 5), done.stdout + done.stderr  # 5: every module skipped, nothing collected
    assert "error" not in done.stdout.lower(), done.stdout
    for name in NEEDING:
        assert f"{name[:-3]} needs " in done.stdout, (name, done.stdout)
    assert 'pip install ".[test]"' in done.stdout


@pytest.mark.slow  # (regenerates or collects a lot: the quick tier leaves it out)
def test_the_slow_marker_is_registered_and_selects_the_heavy_part():
    quick = _collect("-m", "not slow", "--strict-markers", str(HERE / "test_models.py"), str(HERE / "test_differential.py"))
    assert quick.returncode == 0, quick.stdout + quick.stderr
    assert "test_family_case[" in quick.stdout and "test_family_case_chunked" not in quick.stdout
    assert "test_differential.py::" not in quick.stdout
    slow = _collect("-m", "slow", "--strict-markers", str(HERE / "test_models.py"))
    assert slow.returncode == 0 and "test_family_case_chunked[" in slow.stdout and "test_family_case[" not in slow.stdout
