"""Build hook: compile the runtime's hot modules with Cython, when that is possible.

Everything else about the distribution is declared in pyproject.toml. The modules
listed in NATIVE are plain Python and stay importable as such; compiled, they run
the same code as C (ParserBase becomes an extension type, see runtime/base.pxd). The
bundled templates' generated modules (GENERATED) are compiled the same way: a build
pipeline's precompiled parsers, whose scans Cython types from their ``buf: str``
annotations (their str methods become direct calls, their positions C integers).
The compiled build is optional: without Cython or a C compiler, or with
``RESPC_PURE_PYTHON_BUILD=1`` set, the wheel holds the pure-Python runtime alone
and a warning says so. Editable installs (``pip install -e .``) build nothing, so
edits to the sources take effect at once; ``RESPC_BUILD_INPLACE=1`` overrides that.
At run time, ``RESPC_PURE_PYTHON=1`` makes an installed compiled runtime import its
Python sources instead (see respc/_native.py).

With one generated module per bundled family (dozens), the build is kept short: the
sources are translated to C only when build_ext runs (setup.py also runs to get the build
requirements and the metadata), Cython and the C compiler run on every core, and the
generated modules are compiled with GENERATED_CFLAGS (see there).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

def _native_table():
    """respc/_native.py, which names the compiled modules (loaded by path: the package
    itself cannot be imported before it is built)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "respc", "_native.py")
    spec = importlib.util.spec_from_file_location("_respc_native", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_NATIVE = _native_table()
#: the compiled runtime modules (the streaming parser base, content parsers, JSON decoding,
#: tool typing) and their sources
NATIVE = {name: f"runtime/{name.rpartition('.')[2]}.py" for name in _NATIVE.NATIVE_MODULES}
_flag = _NATIVE.env_flag
#: the bundled templates' generated modules, from generated/<leaf>.py
GENERATED = {
    f"{_NATIVE.GENERATED_PACKAGE}.{leaf[: -len('.py')]}": f"generated/{leaf}"
    for leaf in sorted(os.listdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "generated")))
    if leaf.endswith(".py") and leaf != "__init__.py"
}

#: Cython directives. annotation_typing is off: the annotations document, they must not
#: turn into C type checks (the compiled and the pure runtime behave the same).
DIRECTIVES = {"language_level": 3, "annotation_typing": False, "embedsignature": True}
#: for generated modules: the scans' ``buf: str`` annotation types the buffer, and local
#: types are inferred (positions from len() and str.find() become C integers; a buffer
#: position cannot overflow one)
GENERATED_DIRECTIVES = {"language_level": 3, "annotation_typing": True, "infer_types": True}
#: gcc/clang flags after the interpreter's own (-O3 -g). No debug information, in any
#: module: it takes a third of the compile time (RESPC_PURE_PYTHON=1 is the way to debug).
#: Generated modules at -O1: their time goes to the runtime and regex calls they make, so
#: they parse as fast as at -O3 (within noise) and compile about three times faster.
#: The delta stream (runtime/deltas.py, the largest C file) at -O2: it streams deltas as
#: fast as at -O3 (within noise, interleaved runs) and compiles in 10 s instead of 16.
CFLAGS = ["-g0"]
GENERATED_CFLAGS = ["-O1", "-g0"]
MODULE_CFLAGS = {"respc.runtime.deltas": ["-O2", "-g0"]}
#: compilers that take gcc's flags (MSVC keeps its defaults)
_GCC_LIKE = ("unix", "mingw32", "cygwin")


def _warn(message: str) -> None:
    print(f"respc setup: {message}; the pure-Python runtime is used", file=sys.stderr)


def _cores() -> int:
    """The CPU cores this process may use."""
    if hasattr(os, "process_cpu_count"):  # Python 3.13+
        return os.process_cpu_count() or 1
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


class OptionalBuildExt(build_ext):
    """build_ext that leaves a module pure Python where it cannot be compiled.

    It translates the modules to C first (``cythonize``), compiles on every core unless
    told otherwise (``--parallel``/``-j``), and gives gcc-like compilers CFLAGS and, for the
    generated modules, GENERATED_CFLAGS.
    """

    def finalize_options(self) -> None:
        super().finalize_options()
        if self.parallel is None or self.parallel is True:
            self.parallel = _cores()

    def run(self) -> None:
        if self.inplace and not _flag("RESPC_BUILD_INPLACE"):
            return  # an editable install: compiled modules would hide edits to the sources
        try:
            self.cythonize()
        except Exception as exc:  # noqa: BLE001
            _warn(f"Cython failed ({exc})")
            for ext in self.extensions:
                self._drop_stale(ext)
            return
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001 - no compiler: still a working install
            _warn(f"the compiled runtime could not be built ({exc})")

    def cythonize(self) -> None:
        """Translate each extension's Python source to C (under build/cython), in place:
        the runtime's modules with DIRECTIVES, the generated ones with GENERATED_DIRECTIVES."""
        from Cython.Build import cythonize

        options = {"include_path": [_stage_declarations()], "build_dir": "build/cython", "quiet": True, "force": True}
        jobs = self.parallel if self.parallel and self.parallel > 1 else 0
        for directives, group in (
            (DIRECTIVES, [ext for ext in self.extensions if ext.name in NATIVE]),
            (GENERATED_DIRECTIVES, [ext for ext in self.extensions if ext.name in GENERATED]),
        ):
            if not group:
                continue
            try:
                translated = cythonize(group, compiler_directives=directives, nthreads=jobs, **options)
            except Exception:  # noqa: BLE001 - e.g. no process pool here: one process then
                if not jobs:
                    raise
                translated = cythonize(group, compiler_directives=directives, **options)
            sources = {ext.name: ext.sources for ext in translated}
            for ext in group:
                ext.sources = sources[ext.name]

    def build_extensions(self) -> None:
        if self.compiler.compiler_type in _GCC_LIKE:
            for ext in self.extensions:
                flags = GENERATED_CFLAGS if ext.name in GENERATED else MODULE_CFLAGS.get(ext.name, CFLAGS)
                ext.extra_compile_args = [*ext.extra_compile_args, *flags]
        super().build_extensions()  # in parallel: the runtime's modules, the longest, first

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:  # noqa: BLE001
            _warn(f"{ext.name} could not be compiled ({exc})")
            self._drop_stale(ext)

    def _drop_stale(self, ext: Extension) -> None:
        """Remove an earlier build's module (of older sources) that this build did not replace."""
        stale = self.get_ext_fullpath(ext.name)
        if os.path.exists(stale):
            os.remove(stale)


def _stage_declarations() -> str:
    """Lay out the .pxd files under their module names, where Cython looks them up.

    The sources sit in runtime/ but build the modules respc.runtime.*, and Cython finds the
    declarations that augment a module (runtime/base.pxd) by that module's dotted name.
    """
    root = os.path.join("build", "cython", "include")
    for name, path in NATIVE.items():
        declarations = path[: -len(".py")] + ".pxd"
        if not os.path.isfile(declarations):
            continue
        parts = name.split(".")
        package = os.path.join(root, *parts[:-1])
        os.makedirs(package, exist_ok=True)
        for depth in range(1, len(parts)):
            init = os.path.join(root, *parts[:depth], "__init__.pxd")
            if not os.path.exists(init):
                open(init, "w").close()
        shutil.copyfile(declarations, os.path.join(package, parts[-1] + ".pxd"))
    return root


def extensions() -> list[Extension]:
    """The modules to compile, from their Python sources (build_ext translates them to C:
    setup.py runs for the build requirements and the metadata too, which need only names)."""
    if _flag("RESPC_PURE_PYTHON_BUILD"):
        return []
    if importlib.util.find_spec("Cython") is None:
        _warn("Cython is not installed")
        return []
    return [Extension(name, [path]) for name, path in {**NATIVE, **GENERATED}.items()]


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
