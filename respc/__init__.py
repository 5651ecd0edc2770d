"""respc -- the response-template compiler.

Compiles a response template (a declarative JSON description of how a chat model
writes its reply) into a dedicated Python module that parses that model's raw
output, whole or streamed, into a structured assistant message::

    import respc
    message = respc.parse_response(output, respc.load("qwen3"), prefix=prompt)
"""

from ._version import __version__
from .api import (
    CompiledTemplate,
    ResponseParser,
    bundled_templates,
    compile_template,
    get_response_parser,
    load,
    parse_response,
)
from .compiler import TemplateError

__all__ = [
    "__version__",
    "CompiledTemplate",
    "ResponseParser",
    "TemplateError",
    "bundled_templates",
    "compile_template",
    "get_response_parser",
    "load",
    "parse_response",
]
