"""The compiled runtime (setup.py's optional Cython build) and its Python sources.

The rest of the suite runs whichever runtime is installed: ``pip install .`` compiles it
where Cython and a C compiler are available (CI's case), an editable install keeps the
sources. These tests tie the two together: the build's declarations match the sources,
``RESPC_PURE_PYTHON=1`` switches to the sources, and when the installed runtime is
compiled the sources are run through a seeded differential batch against the reference
as well, so both runtimes are checked on every CI run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import respc
from respc import _native
from respc.runtime import base

ROOT = Path(__file__).resolve().parent.parent


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
        cwd=str(ROOT / "tests"),  # not the checkout root: import the installed respc, as pytest does
    )


def test_pxd_fields_are_the_slots_in_order():
    """runtime/base.pxd declares exactly ParserBase's __slots__ (the state the compiled
    extension type keeps in C fields), in the same order."""
    pxd = (ROOT / "runtime" / "base.pxd").read_text(encoding="utf-8")
    fields = re.findall(r"^    cdef public object (\w+)$", pxd, re.M)
    assert fields == list(base.ParserBase.__slots__)


def test_every_compiled_module_has_its_source():
    """setup.py builds each of respc._native.NATIVE_MODULES from runtime/<leaf>.py, and the
    source switch looks for that file beside the extension: each must exist."""
    for name in _native.NATIVE_MODULES:
        assert name.startswith("respc.runtime.")
        assert (ROOT / "runtime" / (name.rpartition(".")[2] + ".py")).is_file(), name
        assert Path(sys.modules[name].__file__).with_suffix("").name.split(".")[0] == name.rpartition(".")[2]


def test_compiled_flag_tells_the_modules_in_use():
    files = [sys.modules[name].__file__ for name in _native.NATIVE_MODULES]
    assert respc.COMPILED_RUNTIME == all(not f.endswith(".py") for f in files), files
    kind = type(vars(base.ParserBase)["feed"]).__name__
    assert kind == ("cython_function_or_method" if respc.COMPILED_RUNTIME else "function")


def test_bundled_modules_are_compiled_with_the_runtime():
    """The wheel compiles the bundled templates' generated modules along with the runtime
    (their .py sources ship beside them: the freshness check and CompiledTemplate.source)."""
    for name in respc.bundled_templates():
        module = respc.load(name).module
        assert module.__name__.startswith(_native.GENERATED_PACKAGE + ".")
        assert module.__file__.endswith(".py") != respc.COMPILED_RUNTIME, module.__file__
    assert len(_native.compiled_generated()) == (len(respc.bundled_templates()) if respc.COMPILED_RUNTIME else 0)


def test_pure_python_switch():
    """RESPC_PURE_PYTHON=1 imports the runtime's Python sources, whichever is installed."""
    done = _run(
        "import respc, sys\n"
        "from respc import _native\n"
        "print(respc.COMPILED_RUNTIME, all(sys.modules[n].__file__.endswith('.py') for n in _native.NATIVE_MODULES))\n"
        "from respc.runtime import base\n"
        "print(type(vars(base.ParserBase)['feed']).__name__)\n"
        "print(all(respc.load(n).module.__file__.endswith('.py') for n in respc.bundled_templates()))\n",
        RESPC_PURE_PYTHON="1",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "function", "True"]


def test_version_names_the_runtime():
    done = _run("import sys; from respc.cli import main; sys.argv = ['respc', '--version']; main()")
    kind = "compiled" if respc.COMPILED_RUNTIME else "pure-Python"
    assert done.stdout.strip() == f"respc {respc.__version__} ({kind} runtime)", done.stderr


@pytest.mark.skipif(not respc.COMPILED_RUNTIME, reason="the runtime is not compiled (editable install)")
def test_python_sources_against_the_reference_too():
    """With the compiled runtime installed, the rest of the suite checks it; this runs its
    Python sources through a seeded differential batch of their own (zero mismatches)."""
    pytest.importorskip("transformers.utils.chat_parsing")
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "differential" / "run.py"), "--cases", "3000", "--seed", "31"],
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "RESPC_PURE_PYTHON": "1"},
        cwd=str(ROOT / "tests"),
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert re.search(r"^\s*mismatches: 0$", done.stdout, re.M), done.stdout[-4000:]
    assert "runtime: pure-Python" in done.stdout, done.stdout[-4000:]
