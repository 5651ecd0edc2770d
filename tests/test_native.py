"""The compiled runtime (setup.py's optional Cython build) and its Python sources.

The rest of the suite runs whichever runtime is installed: ``pip install .`` compiles it
where Cython and a C compiler are available (CI's case), an editable install keeps the
sources. These tests tie the two together: the build's declarations match the sources,
``RESPC_PURE_PYTHON=1`` switches to the sources, and when the installed runtime is
compiled the sources are run through a seeded differential batch against the reference
as well, so both runtimes are checked on every CI run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path
from unittest import mock

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
    fields = re.findall(r"^    cdef public \w+ (\w+)$", pxd, re.M)
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
    # compiled, they share one copy of Cython's utility code (setup.py SHARED_UTILITY)
    shared = sys.modules.get("respc._cyutility")
    assert (shared is not None and not shared.__file__.endswith(".py")) == respc.COMPILED_RUNTIME


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
@pytest.mark.slow
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


# -- the build (setup.py): what it compiles, how, and that compiled parsers behave as sources


def _setup_py(monkeypatch) -> types.ModuleType:
    """setup.py, loaded with setuptools.setup() replaced (nothing is built) and Cython taken
    for installed (the test environment need not have it: only the build's does)."""
    setuptools = pytest.importorskip("setuptools")
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "Cython" else find_spec(name, *a))
    spec = importlib.util.spec_from_file_location("_respc_setup", ROOT / "setup.py")
    module = importlib.util.module_from_spec(spec)
    with mock.patch.object(setuptools, "setup", lambda **kwargs: None):
        spec.loader.exec_module(module)
    return module


def _build_ext(setup_py: types.ModuleType, exts: list) -> object:
    from setuptools import Distribution

    command = setup_py.OptionalBuildExt(Distribution({"name": "respc", "ext_modules": exts}))
    command.ensure_finalized()
    return command


def test_setup_compiles_the_runtime_and_every_generated_module(monkeypatch):
    """One extension per runtime module and per generated/<leaf>.py, listed from its Python
    source: the translation to C waits for build_ext (setup.py also runs for the build
    requirements and the metadata, which need only the names). First, the shared utility
    module, whose C Cython writes (the sdist ships no such file)."""
    setup_py = _setup_py(monkeypatch)
    exts = setup_py.extensions()
    generated = sorted(p.stem for p in (ROOT / "generated").glob("*.py") if p.name != "__init__.py")
    assert [e.name for e in exts] == [
        setup_py.SHARED_UTILITY,
        *_native.NATIVE_MODULES,
        *(f"{_native.GENERATED_PACKAGE}.{g}" for g in generated),
    ]
    assert exts[0].sources == ["respc/_cyutility.c"] and not (ROOT / "respc" / "_cyutility.c").exists()
    assert all(len(e.sources) == 1 and e.sources[0].endswith(".py") for e in exts[1:]), [e.sources for e in exts]
    assert "respc/_cyutility.c" not in _build_ext(setup_py, exts).get_source_files()
    monkeypatch.setenv("RESPC_PURE_PYTHON_BUILD", "1")
    assert setup_py.extensions() == []


def test_build_runs_on_every_core_with_the_generated_modules_flags(monkeypatch, tmp_path):
    """build_ext translates and compiles in parallel on every core by default, each module
    compiled as soon as it is translated, the longest first (the runtime's modules, the shared
    utility module, then the generated ones, each group by source size). It gives gcc-like
    compilers GENERATED_CFLAGS (-Og, no debug information, two of Cython's fast paths off) for the generated modules, CFLAGS
    (-O2) for the others, and includes the header that compiles every module's one-time code
    unoptimised; other compilers (MSVC) keep their defaults."""
    monkeypatch.chdir(tmp_path)  # (the header is written under build/cython)
    setup_py = _setup_py(monkeypatch)
    assert setup_py.GENERATED_CFLAGS[:2] == ["-Og", "-g0"] and setup_py.CFLAGS == ["-O2", "-g0"]
    for compiler_type, expect_flags in (("unix", True), ("msvc", False)):
        exts = setup_py.extensions()
        command = _build_ext(setup_py, exts)
        assert command.parallel == setup_py._cores() >= 1
        command.compiler = types.SimpleNamespace(compiler_type=compiler_type)
        command.parallel = 1  # (no process pool: the mock below is not picklable)
        built = []
        with mock.patch.object(
            setup_py.OptionalBuildExt, "_translate_and_build", lambda self, pool, ext, failed: built.append(ext.name) or True
        ):
            command.build_extensions()
        runtime = sorted(_native.NATIVE_MODULES, key=lambda n: -os.path.getsize(ROOT / setup_py.NATIVE[n]))
        generated = sorted(setup_py.GENERATED, key=lambda n: (-os.path.getsize(ROOT / setup_py.GENERATED[n]), n))
        assert built == [*runtime, setup_py.SHARED_UTILITY, *generated]
        assert command.extensions == exts
        header = tmp_path / "build" / "cython" / "include" / "respc_cold_code.h"
        for ext in exts:
            generated = ext.name.startswith(_native.GENERATED_PACKAGE + ".")
            flags = [*(setup_py.GENERATED_CFLAGS if generated else setup_py.CFLAGS), "-include", str(header)] if expect_flags else []
            assert ext.extra_compile_args == flags, (compiler_type, ext.name)
    assert header.read_text(encoding="utf-8") == setup_py.COLD_CODE_HEADER
    assert '#define CYTHON_SMALL_CODE __attribute__((cold, optimize("O0")))' in setup_py.COLD_CODE_HEADER


def test_without_the_shared_utility_module_nothing_else_is_kept(monkeypatch, tmp_path, capsys):
    """Every compiled module imports the shared utility module: when it fails to compile, the
    others' builds are removed (and an earlier build's too), so the install is a working
    pure-Python one instead of extensions that cannot be imported. When Cython fails on any
    module, nothing is compiled after it and nothing is kept."""
    monkeypatch.chdir(tmp_path)
    setup_py = _setup_py(monkeypatch)
    cython_build = pytest.importorskip("Cython.Build")
    for failing in ("compile", "translate"):
        exts = setup_py.extensions()
        command = _build_ext(setup_py, exts)
        command.compiler = types.SimpleNamespace(compiler_type="unix")
        command.parallel = 1
        compiled = []

        def compile_one(self, ext):
            if ext.name == setup_py.SHARED_UTILITY and failing == "compile":
                raise RuntimeError("no compiler")
            compiled.append(ext.name)

        def translate(modules, **options):
            if modules[0].name == setup_py.SHARED_UTILITY and failing == "translate":
                raise RuntimeError("bad source")
            return modules

        dropped = []
        monkeypatch.setattr(setup_py.OptionalBuildExt, "_drop_stale", lambda self, ext: dropped.append(ext.name))
        monkeypatch.setattr(cython_build, "cythonize", translate)
        with mock.patch.object(setup_py.build_ext, "build_extension", compile_one):
            command.build_extensions()
        assert set(dropped) == {e.name for e in exts}, failing
        err = capsys.readouterr().err
        if failing == "compile":
            assert f"{setup_py.SHARED_UTILITY} could not be compiled (no compiler)" in err
            assert len(compiled) == len(exts) - 1
        else:
            assert f"Cython failed ({setup_py.SHARED_UTILITY}: bad source)" in err
            assert compiled == [e.name for e in sorted(exts, key=setup_py._build_order)][: len(_native.NATIVE_MODULES)]


def test_editable_build_translates_nothing(monkeypatch):
    """An editable install's in-place build_ext returns before Cython or the compiler runs."""
    setup_py = _setup_py(monkeypatch)
    command = _build_ext(setup_py, setup_py.extensions())
    command.inplace = True
    monkeypatch.delenv("RESPC_BUILD_INPLACE", raising=False)
    with mock.patch.object(setup_py.OptionalBuildExt, "build_extensions") as translate:
        with mock.patch.object(setup_py.build_ext, "run") as build:
            command.run()
    translate.assert_not_called()
    build.assert_not_called()


#: run twice (compiled, then RESPC_PURE_PYTHON=1): every bundled family on its samples file's
#: cases (SAMPLES is set before it), whole and cut short at seeded points, and streamed in
#: 1-, 3- and seeded-size chunks
_PARITY = r"""
import json, random
import respc

files, results = {}, {}
for name in respc.bundled_templates():
    compiled = respc.load(name)
    files[name] = compiled.module.__file__.endswith(".py")
    path = SAMPLES / f"{name}.json"
    if not path.is_file():
        continue
    family = json.loads(path.read_text(encoding="utf-8"))
    rng = random.Random(name)
    out = results[name] = []
    for case in family["cases"]:
        tools = family.get("tools") if case.get("tools", True) else None
        text, prefix = case["output"], case["prefix"]
        for cut in (len(text), rng.randint(0, len(text)), rng.randint(0, len(text))):
            try:
                out.append(respc.parse_response(text[:cut], compiled, prefix=prefix, tools=tools))
            except Exception as exc:
                out.append([cut, type(exc).__name__, str(exc)])
        for size in (1, 3, rng.randint(4, 40)):
            try:
                parser = respc.get_response_parser(compiled, prefix=prefix, tools=tools)
                events = [parser.feed(text[i : i + size]) for i in range(0, len(text), size)]
                out.append([events, parser.finalize()])
            except Exception as exc:
                out.append([size, type(exc).__name__, str(exc)])
print(json.dumps({"sources": files, "results": results}, sort_keys=True, default=repr))
"""


@pytest.mark.skipif(not respc.COMPILED_RUNTIME, reason="the runtime is not compiled (editable install)")
def test_compiled_generated_modules_parse_like_their_sources():
    """Every bundled family's compiled module (built at GENERATED_CFLAGS) gives what its
    Python source gives (RESPC_PURE_PYTHON=1) on the family's sample replies, whole and
    streamed: the same messages, events and errors."""
    code = f"from pathlib import Path\nSAMPLES = Path({str(ROOT / 'templates' / 'samples')!r})\n{_PARITY}"
    compiled, source = _run(code), _run(code, RESPC_PURE_PYTHON="1")
    assert compiled.returncode == 0, compiled.stderr
    assert source.returncode == 0, source.stderr
    compiled, source = json.loads(compiled.stdout), json.loads(source.stdout)
    assert not any(compiled["sources"].values()), compiled["sources"]
    assert all(source["sources"].values()), source["sources"]
    assert compiled["results"], "no family has samples"
    for name in compiled["results"]:
        assert compiled["results"][name] == source["results"][name], name


@pytest.mark.skipif(os.environ.get("CI") != "true", reason="only CI promises a compiler: elsewhere a build may be pure")
def test_ci_builds_the_compiled_runtime():
    """CI installs with Cython and a C compiler: a module that fails to compile (the build
    then warns and falls back to its Python source) must fail the run, not pass it slower."""
    assert respc.COMPILED_RUNTIME, respc.RUNTIME_INFO
    assert len(_native.compiled_generated()) == len(respc.bundled_templates())
