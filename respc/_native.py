"""Which runtime runs: the compiled one or its Python sources.

``pip install .`` compiles the runtime's hot modules with Cython where it can, and the
bundled templates' generated modules too (see setup.py; the sources stay in the package
beside them). The compiled modules are the same code, so they give the same events and
messages; Python's import system prefers them. Setting ``RESPC_PURE_PYTHON=1`` before
respc is imported makes it import the Python sources instead: for a debugger or a line
profiler, or to compare the two.

A source checkout is never compiled: ``import respc`` run in the repository root (where the
current directory comes first on ``sys.path``) imports the checkout's sources, not an
installed copy, and so does an editable install. :func:`runtime_info` says which runtime
runs and why; :func:`runtime_files` where each module came from.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

#: the modules setup.py compiles (from runtime/<leaf>.py; setup.py reads this table)
NATIVE_MODULES = (
    "respc.runtime.base",
    "respc.runtime.scan",
    "respc.runtime.content",
    "respc.runtime.decode",
    "respc.runtime.tools",
    "respc.runtime.deltas",
)

#: the package of the bundled templates' generated modules, which setup.py compiles as well
#: (from generated/<leaf>.py; templates compiled at run time stay Python)
GENERATED_PACKAGE = "respc.generated"

#: the environment variable that asks for the Python sources
PURE_PYTHON_ENV = "RESPC_PURE_PYTHON"


def env_flag(name: str) -> bool:
    """An environment variable set to anything but "", 0, false or no (setup.py's too)."""
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


class _SourceFinder(importlib.abc.MetaPathFinder):
    """Finds the ``.py`` source of a compiled module (runtime or bundled generated module),
    ahead of the extension."""

    def find_spec(self, fullname, path, target=None):  # noqa: ANN001 - the finder protocol
        if not path or (fullname not in NATIVE_MODULES and fullname.rpartition(".")[0] != GENERATED_PACKAGE):
            return None
        leaf = fullname.rpartition(".")[2] + ".py"
        for entry in path:
            source = os.path.join(entry, leaf)
            if os.path.isfile(source):
                loader = importlib.machinery.SourceFileLoader(fullname, source)
                return importlib.util.spec_from_file_location(fullname, source, loader=loader)
        return None


def install() -> None:
    """Put the source finder first on ``sys.meta_path`` if the sources were asked for."""
    if env_flag(PURE_PYTHON_ENV) and not any(isinstance(f, _SourceFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _SourceFinder())


def runtime_files() -> dict[str, str]:
    """Where each of the runtime's compilable modules was imported from: an extension module
    (``.so``, ``.pyd``) when it runs compiled, its ``.py`` source otherwise."""
    return {name: importlib.import_module(name).__file__ for name in NATIVE_MODULES}


def compiled_runtime() -> bool:
    """True when each of the runtime's compilable modules was imported as an extension module."""
    return all(not path.endswith(".py") for path in runtime_files().values())


def runtime_info() -> str:
    """One line: which runtime runs and, when it is the Python sources, why."""
    base = os.path.abspath(runtime_files()[NATIVE_MODULES[0]])
    if compiled_runtime():
        return f"compiled runtime ({os.path.dirname(base)})"
    if env_flag(PURE_PYTHON_ENV):
        return f"pure-Python runtime ({PURE_PYTHON_ENV} is set)"
    # An installed copy keeps the runtime inside the package (respc/runtime/); a source
    # checkout beside it (runtime/ next to respc/), and nothing there is compiled.
    tree = os.path.dirname(os.path.dirname(base))
    if tree != os.path.dirname(os.path.abspath(__file__)):
        return (
            f"pure-Python runtime: respc was imported from the source checkout {tree} (first on "
            "sys.path: the current directory, PYTHONPATH, or an editable install), which is never "
            "compiled; `pip install .` and run from another directory for the compiled one"
        )
    return (
        "pure-Python runtime: this install has no compiled modules (built without Cython or a C "
        "compiler, or with RESPC_PURE_PYTHON_BUILD=1)"
    )


def compiled_generated() -> list[str]:
    """The bundled generated modules imported so far that are extension modules."""
    prefix = GENERATED_PACKAGE + "."
    return sorted(
        name
        for name, module in list(sys.modules.items())
        if name.startswith(prefix) and not (getattr(module, "__file__", None) or ".py").endswith(".py")
    )
