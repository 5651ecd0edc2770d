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
from . import ray  # noqa: E402  (Ray Data helpers; imports no `ray` package)
from .batch import BatchError, RowError, parse_batch  # noqa: E402
from .chat.detect import detect  # noqa: E402  (a chat template's bundled family)
from .chat.infer import InferError, infer  # noqa: E402  (a response template from a chat template)
from .chat.model import for_model  # noqa: E402
from .compiler import TemplateError, TemplateWarning  # noqa: E402
from .compiler.grammar import GrammarUnsupported  # noqa: E402
from . import openai  # noqa: E402  (Chat Completions deltas; imports no `openai` package)
from .integrations.transformers import from_pretrained  # noqa: E402  (reads tokenizer_config.json; imports no transformers)
from .runtime.base import PrefixWarning, RegexTimeout  # noqa: E402
from .runtime.loader import CacheWarning  # noqa: E402
from .runtime.scan import REGEX_BUDGET, REGEX_TIMEOUT  # noqa: E402

#: True when the runtime runs compiled (built by ``pip install .`` where Cython and a C
#: compiler are available), False when it runs from its Python sources. Those are what
#: ``import respc`` finds in a source checkout, so it is False in the repository root even
#: with a compiled copy installed (the current directory comes first on ``sys.path``):
#: run from another directory to use that copy. RUNTIME_INFO says which runs and why.
COMPILED_RUNTIME: bool = _native.compiled_runtime()

#: One line on the runtime in use: compiled (and from where), or pure Python and why
#: (RESPC_PURE_PYTHON, a source checkout, an install without compiled modules)
RUNTIME_INFO: str = _native.runtime_info()

__all__ = [
    "__version__",
    "COMPILED_RUNTIME",
    "RUNTIME_INFO",
    "REGEX_BUDGET",
    "REGEX_TIMEOUT",
    "RegexTimeout",
    "BatchError",
    "CacheWarning",
    "CompiledTemplate",
    "InferError",
    "PrefixWarning",
    "ResponseParser",
    "RowError",
    "GrammarUnsupported",
    "TemplateError",
    "TemplateWarning",
    "bundled_templates",
    "compile_template",
    "detect",
    "for_model",
    "infer",
    "from_pretrained",
    "get_response_parser",
    "load",
    "parse_batch",
    "parse_response",
]
