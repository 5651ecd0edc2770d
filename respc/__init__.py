"""respc -- the response-template compiler.

Compiles a response template (a declarative JSON description of how a chat model
writes its reply) into a dedicated Python module that parses that model's raw
output, whole or streamed, into a structured assistant message::

    import respc
    message = respc.parse_response(output, respc.load("qwen3"), prefix=prompt)
"""

import os as _os

# A source checkout keeps respc's subpackages beside this folder (compiler/, runtime/,
# generated/, templates/; the build maps them into the package). Let `import respc` work
# from the checkout too, e.g. `python -c "import respc"` run in the repository root.
_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if not _os.path.isdir(_os.path.join(_os.path.dirname(__file__), "compiler")) and _os.path.isfile(
    _os.path.join(_root, "compiler", "__init__.py")
):
    __path__.append(_root)  # type: ignore[name-defined]  # noqa: F821
del _root

from . import _native  # noqa: E402

_native.install()  # RESPC_PURE_PYTHON=1: the runtime's Python sources, not its compiled modules

from ._version import __version__  # noqa: E402
from .api import (  # noqa: E402
    CompiledTemplate,
    ResponseParser,
    bundled_templates,
    compile_template,
    get_response_parser,
    load,
    parse_response,
)
from .compiler import TemplateError, TemplateWarning  # noqa: E402

#: True when the runtime runs compiled (built by ``pip install .`` where Cython and a C
#: compiler are available), False when it runs from its Python sources
COMPILED_RUNTIME: bool = _native.compiled_runtime()

__all__ = [
    "__version__",
    "COMPILED_RUNTIME",
    "CompiledTemplate",
    "ResponseParser",
    "TemplateError",
    "TemplateWarning",
    "bundled_templates",
    "compile_template",
    "get_response_parser",
    "load",
    "parse_response",
]
