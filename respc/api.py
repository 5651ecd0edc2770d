"""The public API: compile templates (cached by hash) and parse with them.

Names and argument order follow transformers' ``parse_response`` /
``ResponseParser`` so respc is a drop-in replacement.
"""

from __future__ import annotations

import difflib
import marshal
import os
import pickle
import re
import sys
import threading
import types
from collections.abc import Callable, Iterable
from importlib import resources
from typing import Any

from ._version import __version__
from .compiler import canonical_json, compile_source, format_source, hash_canonical, load_template_file
from .compiler.validate import TemplateError, validate_template
from .runtime import loader
from .runtime.base import PREFIX_REQUIRED, ParserBase
from .runtime.scan import REGEX_BUDGET, REGEX_TIMEOUT

__all__ = [
    "CompiledTemplate",
    "ResponseParser",
    "bundled_templates",
    "compile_template",
    "get_response_parser",
    "load",
    "parse_response",
]

Tools = Iterable[dict | Callable] | None


def _plain_prefix(prefix: Any) -> str:
    if not isinstance(prefix, str):
        raise TypeError(f"prefix must be a str, got {type(prefix).__name__}")
    return prefix

_PREFIX_TYPE = "prefix must be a str (or a list of str with a list of texts), got {}"


def _tool_list(tools: Iterable[dict | Callable]) -> list[dict | Callable]:
    """``tools`` checked and as a list (a generator then serves every text of a batch).

    It must be a list (any iterable) of tool schemas (dicts, as for ``apply_chat_template``)
    and functions. The reference iterates a str or a lone dict as well, and finds no tool in
    its characters or keys: a mistake whose only sign would be arguments left untyped, so it
    is an error here. So is an item that is not a tool (``runtime.tools.tool_types``: the
    reference skips those)."""
    if type(tools) is list:
        return tools  # (the common case, before the slower ABC check)
    if isinstance(tools, (str, bytes, dict)) or not isinstance(tools, Iterable):
        raise TypeError(
            f"tools must be a list of tools (JSON schema dicts or functions), got {type(tools).__name__}"
            + (": put the one tool in a list" if isinstance(tools, dict) else "")
        )
    return list(tools)


class CompiledTemplate:
    """A template compiled into its own parser module.

    ``hash`` identifies it (template + respc version), ``source`` is the
    generated module, ``template`` the template dict; ``parse()`` parses a whole
    output and ``parser()`` starts a stream.

    A template compiled at run time executes its module as emitted; ``source`` is that
    code formatted with black, worked out when first asked for (formatting costs far more
    than compiling, and changes only layout: black checks that the code means the same).

    It pickles by what defines it, so it travels to other processes (process pools, HF
    ``datasets`` workers, Ray): a bundled template by its name, any other by its template
    dict, each with its hash. Unpickling loads the bundled module, or compiles the template
    through the usual caches, and checks that the hash is the same (it is not under another
    respc version). ``copy.copy`` and ``copy.deepcopy`` give the object itself: it is immutable.
    """

    __slots__ = ("hash", "_source", "_formatted", "template", "module", "Parser", "name")

    def __init__(self, module: types.ModuleType, source: str, name: str | None = None, *, formatted: bool = True):
        self.module = module
        self.Parser: type[ParserBase] = module.Parser
        self.hash: str = module.TEMPLATE_HASH
        self.template: dict = module.TEMPLATE
        self._source = source
        self._formatted = formatted
        self.name = name
        _BY_PARSER.setdefault(self.Parser, self)

    @property
    def source(self) -> str:
        """The generated module's source, black-formatted (what ``respc compile`` prints)."""
        if not self._formatted:
            self._source = format_source(self._source)
            self._formatted = True
        return self._source

    def parser(
        self,
        *,
        prefix: str | None = None,
        tools: Tools = None,
        spans: bool = False,
        on_malformed: str = "raise",
        regex_timeout: float | None = REGEX_TIMEOUT,
        regex_budget: float | None = REGEX_BUDGET,
    ) -> ParserBase:
        """A streaming parser: ``initial_events``, ``feed(text)``, ``finalize()``.

        ``spans=True``: region_open/region_close carry the ``start``/``end`` offsets of their
        delimiter in the parser's input (the cut prefix, then the output), region_chunk its
        ``start``, and region_open the open pattern's named ``captures``.
        ``on_malformed="event"``: a region whose content fails to parse ends in a
        ``region_malformed`` event (``field``, ``error``, ``text``) and parsing goes on;
        the default ``"raise"`` raises the error, as the reference does.
        ``regex_timeout``: seconds one call of a template regex that may backtrack without
        bound may take; ``regex_budget``: seconds all such calls of this parser may take
        together, from the prefix to finalize (None: no bound); past either the region is
        malformed (a ``respc.RegexTimeout`` with ``on_malformed="raise"``).
        """
        return self.Parser(
            prefix,
            tools=_tool_list(tools) if tools is not None else None,
            spans=spans,
            on_malformed=on_malformed,
            regex_timeout=regex_timeout,
            regex_budget=regex_budget,
        )

    def parse(
        self,
        text: str | list[str],
        *,
        prefix: str | list[str] | None = None,
        tools: Tools = None,
        on_malformed: str = "raise",
        regex_timeout: float | None = REGEX_TIMEOUT,
        regex_budget: float | None = REGEX_BUDGET,
    ):
        """Parse a whole output (a dict), or a list of outputs (a list of dicts).

        ``on_malformed="collect"`` returns ``(message, errors)`` (``(messages, errors)`` for
        a list): a region whose content fails to parse is left out of the message, and
        ``errors`` lists its region_malformed event (``field``, ``error``, ``text``, and for a
        list the ``index`` of the text). ``regex_timeout`` and ``regex_budget``: see
        :meth:`parser` (the budget is each text's).
        """
        if prefix is None:
            raise ValueError(PREFIX_REQUIRED)
        if tools is not None:
            tools = _tool_list(tools)
        Parser = self.Parser
        if on_malformed != "raise" or regex_timeout is not REGEX_TIMEOUT or regex_budget is not REGEX_BUDGET:
            return self._parse_collecting(text, prefix, tools, on_malformed, (regex_timeout, regex_budget))
        if isinstance(text, str):
            if not isinstance(prefix, str):
                if not isinstance(prefix, (list, tuple)):
                    raise TypeError(_PREFIX_TYPE.format(type(prefix).__name__))
                raise ValueError("prefix must be a str when text is a single str (a list of prefixes goes with a list of texts)")
            return Parser.parse_whole(prefix, text, tools)
        if not isinstance(text, (list, tuple)):
            raise TypeError(f"text must be a str or a list of str, got {type(text).__name__}")
        if isinstance(prefix, str):
            prefixes = [prefix] * len(text)
        elif isinstance(prefix, (list, tuple)):
            if len(prefix) != len(text):
                raise ValueError(
                    f"got {len(text)} texts but {len(prefix)} prefixes; pass one prefix per text, "
                    "or a single str to use for all"
                )
            prefixes = prefix
        else:
            raise TypeError(_PREFIX_TYPE.format(type(prefix).__name__))
        out = []
        for item, item_prefix in zip(text, prefixes):
            if item_prefix is None:
                raise ValueError(PREFIX_REQUIRED)
            out.append(Parser.parse_whole(item_prefix, item, tools))
        return out

    def grammar(
        self,
        tools: Tools,
        *,
        format: str = "lark",
        tool_choice: str = "auto",
        parallel_tool_calls: bool = True,
        prefix: str | None = None,
        special_tokens: Any = None,
    ) -> Any:
        """The grammar of the outputs this template parses, for constrained decoding:
        ``format="lark"`` a Lark grammar for llguidance (str), ``"structural_tag"`` an
        xgrammar structural tag (dict). ``tool_choice``: "auto", "required", "none" or a
        tool name; ``parallel_tool_calls=False``: at most one call; ``prefix``: the prompt
        (the grammar starts in the state it leaves, e.g. inside a pre-opened reasoning
        block); ``special_tokens``: a list of marker strings, or a tokenizer, whose markers
        are written as special tokens. Raises ``respc.GrammarUnsupported`` when the template
        cannot be written as a grammar. Cached per template, tools and options. See
        docs/grammar.md."""
        from .compiler.grammar import cached_grammar

        start = None
        if prefix is not None:
            parser = self.Parser(_plain_prefix(prefix))
            used = {name for name in parser._out if name not in parser.DEFAULTS}
            state = parser._state
            if parser._opened and state < len(parser.STATES) - 1:
                used.add(parser._name)
            # the text the parser holds at the prompt's end (a delimiter it may begin, as
            # functionary's ">>>"): the grammar's first step starts inside it
            start = (state, self.Parser.cut_prefix(prefix) if prefix else "", tuple(sorted(used)),
                     "".join([parser._held, *parser._more_blocks, *parser._more]))
        return cached_grammar(
            self.hash,
            self.template,
            tools,
            format=format,
            tool_choice=tool_choice,
            parallel_tool_calls=parallel_tool_calls,
            special_tokens=special_tokens,
            start=start,
        )

    def _parse_collecting(self, text: Any, prefix: Any, tools: Any, on_malformed: Any, bounds: tuple) -> Any:
        """parse() with ``on_malformed="collect"`` (the messages and the errors met), or
        another time bound or budget (``bounds``)."""
        if on_malformed not in ("raise", "collect"):
            raise ValueError(f"on_malformed must be 'raise' or 'collect' for a whole output, got {on_malformed!r}")
        collect = on_malformed == "collect"
        errors: list[dict] = []
        if isinstance(text, str):
            if not isinstance(prefix, str):
                return self.parse(text, prefix=prefix, tools=tools), errors  # raises the usual error
            message = self.Parser.parse_whole(prefix, text, tools, errors if collect else None, *bounds)
            return (message, errors) if collect else message
        if not isinstance(text, (list, tuple)):
            return self.parse(text, prefix=prefix, tools=tools), errors  # raises the usual error
        prefixes = [prefix] * len(text) if isinstance(prefix, str) else prefix
        if not isinstance(prefixes, (list, tuple)) or len(prefixes) != len(text):
            return self.parse(text, prefix=prefix, tools=tools), errors  # raises the usual error
        messages = []
        for index, (item, item_prefix) in enumerate(zip(text, prefixes)):
            if item_prefix is None:
                raise ValueError(PREFIX_REQUIRED)
            found: list[dict] = []
            messages.append(self.Parser.parse_whole(item_prefix, item, tools, found if collect else None, *bounds))
            errors += [{**error, "index": index} for error in found]
        return (messages, errors) if collect else messages

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"<CompiledTemplate{label} {self.hash[:19]}...>"

    def __reduce__(self) -> tuple[Callable[..., CompiledTemplate], tuple]:
        # a bundled template by its name (its generated module is in every install), any
        # other by its template; the version only makes a mismatch's error say what differs
        defined_by = (self.name, None) if self.name is not None else (None, self.template)
        return _restore_template, (*defined_by, self.hash, __version__)

    def __copy__(self) -> CompiledTemplate:
        return self

    def __deepcopy__(self, memo: dict) -> CompiledTemplate:
        return self


def _restore_template(name: str | None, template: dict | None, digest: str, version: str) -> CompiledTemplate:
    """Unpickle a CompiledTemplate (see ``CompiledTemplate.__reduce__``): the bundled template
    ``name``, or ``template`` compiled, checked to have the hash ``digest`` it had where it was
    pickled (by respc ``version``)."""
    what = f"the bundled template {name!r}" if name is not None else "a template compiled at run time"
    where = f"unpickling a respc CompiledTemplate ({what}, pickled by respc {version})"
    if version != __version__:
        fix = (
            f"this process runs respc {__version__}: install respc {version} here too "
            "(every process and worker needs the same respc version)"
        )
    else:
        fix = f"both run respc {version}, but from different installs or checkouts: run every process from one install"
    try:
        compiled = load(name) if name is not None else compile_template(template)
    except TemplateError as exc:
        raise pickle.UnpicklingError(f"{where}: {exc}; {fix}") from exc
    if compiled.hash != digest:
        raise pickle.UnpicklingError(
            f"{where}: it has hash {digest} there but {compiled.hash} here, so it would not parse alike; {fix}"
        )
    return compiled


def _parser_reduce_args(parser_class: type[ParserBase]) -> CompiledTemplate:
    """The CompiledTemplate that the generated ``Parser`` class ``parser_class`` belongs to:
    what a pickled streaming parser names its template by (it pickles by what defines it).

    Every CompiledTemplate registers its Parser class; a generated module imported
    directly (``from respc.generated.qwen3 import Parser``) is found in ``sys.modules``
    (modules compiled at run time are not there) and compiled, which gives its bundled
    template back."""
    compiled = _BY_PARSER.get(parser_class)
    if compiled is not None:
        return compiled
    module = sys.modules.get(getattr(parser_class, "__module__", None) or "")
    if getattr(module, "Parser", None) is not parser_class or not isinstance(getattr(module, "TEMPLATE", None), dict):
        raise TypeError(
            f"{getattr(parser_class, '__qualname__', parser_class)!r} is not the Parser class of a respc generated "
            "module: make parsers with respc.compile_template(template).parser() or respc.ResponseParser()"
        )
    compiled = compile_template(module.TEMPLATE)
    if compiled.hash != module.TEMPLATE_HASH:
        raise TypeError(
            f"{module.__name__} was generated as {module.TEMPLATE_HASH} but its template compiles to "
            f"{compiled.hash} under respc {__version__}: regenerate it (respc build, or respc compile)"
        )
    return compiled


_LOCK = threading.Lock()
_BY_CANONICAL: dict[str, CompiledTemplate] = {}
_BY_NAME: dict[str, CompiledTemplate] = {}
# id(template dict) -> (that dict, its snapshot then, its compiled template); holding
# the dict keeps its id from being reused while the entry exists
_BY_OBJECT: dict[int, tuple[dict, bytes, CompiledTemplate]] = {}
_BY_OBJECT_MAX = 256
# a generated Parser class -> the first CompiledTemplate made of its module (_parser_reduce_args)
_BY_PARSER: dict[type, CompiledTemplate] = {}


def _snapshot(template: dict) -> bytes | None:
    """What the dict holds now, to tell whether it changed since: its marshal bytes (a
    decodable encoding, so equal bytes mean equal content; several times cheaper than
    repr). None when marshal refuses it: it then holds what no template may (a subclass,
    another type, nesting past marshal's limit), which the checks that follow report."""
    try:
        return marshal.dumps(template)
    except ValueError:
        return None


def _build(template: dict, canonical: str) -> CompiledTemplate:
    digest = hash_canonical(canonical)
    for name in _bundled_hashes().get(digest, ()):  # a bundled template: its generated module
        bundled = _bundled(name)
        if bundled is not None and bundled.hash == digest:
            return bundled
    source = loader.read_cached(digest)
    if source is not None:
        return CompiledTemplate(loader.module_from_source(source, digest), source, formatted=False)
    digest, source = compile_source(template, format=False)
    module = loader.module_from_source(source, digest)
    loader.write_cached(digest, source)  # only a module that compiled and ran is cached
    return CompiledTemplate(module, source, formatted=False)


def compile_template(
    template: dict | str | os.PathLike | CompiledTemplate, *, strict: bool = False
) -> CompiledTemplate:
    """Compile ``template`` (a dict, a JSON file path, a bundled template's name, or a
    CompiledTemplate).

    Compiled modules are cached in-process and on disk by template hash, so a
    template compiles once; every template runs as generated code. What the
    template says that the reference accepts but looks wrong is issued as a
    :class:`respc.TemplateWarning` when it compiles; ``strict=True`` raises it as a
    :class:`respc.TemplateError` instead.
    """
    if isinstance(template, CompiledTemplate):
        return template
    if not isinstance(template, (dict, str, os.PathLike)):
        hint = ""
        if isinstance(template, bytes):
            hint = " (decode the bytes first: json.loads() for a template's JSON text)"
        raise TemplateArgumentError(
            "template",
            "must be a dict (a JSON object), a path to a template JSON file, a bundled template's name "
            f"(str) or a CompiledTemplate; got {type(template).__name__}{hint}",
        )
    if isinstance(template, (str, os.PathLike)):
        template = resolve_template(template)
        if isinstance(template, CompiledTemplate):
            return template
    if strict:
        validate_template(template, strict=True)
    # The same dict object passed again: its snapshot (much cheaper than the canonical
    # JSON) tells whether it changed since.
    seen = _BY_OBJECT.get(id(template)) if template.__class__ is dict else None
    if seen is not None and seen[0] is template:
        shown = _snapshot(template)
        if shown == seen[1]:
            return seen[2]
    else:
        shown = None
    canonical = canonical_json(template)
    compiled = _BY_CANONICAL.get(canonical)
    if compiled is None:
        with _LOCK:
            compiled = _BY_CANONICAL.get(canonical)
            if compiled is None:
                compiled = _BY_CANONICAL[canonical] = _build(template, canonical)
    if template.__class__ is dict:
        if len(_BY_OBJECT) >= _BY_OBJECT_MAX:
            _BY_OBJECT.clear()
        _BY_OBJECT[id(template)] = (template, shown or _snapshot(template), compiled)
    return compiled


def resolve_template(ref: str | os.PathLike) -> dict | CompiledTemplate:
    """A template named by a string: a path when it is an ``os.PathLike``, ends in ``.json``
    or holds a path separator (read as a template JSON or a tokenizer_config.json);
    otherwise the bundled template of that name (``-``, ``.`` and ``_`` alike), whatever
    files the working directory holds (a file there never stands in for a bundled name).
    An unknown name is a TemplateError that lists the close matches and says how to pass
    a path."""
    text = os.fspath(ref)
    if not isinstance(text, str):
        raise TypeError(f"a template path must be a str, got {type(text).__name__}")
    if isinstance(ref, os.PathLike) or is_template_path(text):
        return load_template_file(text)
    return load(text)


def is_template_path(text: str) -> bool:
    """Whether the string ``text`` names a template file rather than a bundled template:
    it ends in ``.json`` or holds a path separator (no file system access)."""
    return text.endswith(".json") or os.sep in text or (os.altsep is not None and os.altsep in text)


def _ident(name: str) -> str:
    return re.sub(r"[^0-9a-z_]", "_", name.strip().lower().replace("-", "_").replace(".", "_"))


def bundled_templates() -> list[str]:
    """Names of the bundled model templates (``respc.load`` takes any of them)."""
    folder = resources.files("respc.templates")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


_BUNDLED_HASHES: dict[str, tuple[str, ...]] | None = None


def _bundled_hashes() -> dict[str, tuple[str, ...]]:
    """The hash of each bundled template (this respc version's), mapped to the names that
    have it (families whose formats are the same have equal templates: glm-4.5 and glm-4.6)."""
    global _BUNDLED_HASHES
    if _BUNDLED_HASHES is None:
        folder = resources.files("respc.templates")
        table: dict[str, tuple[str, ...]] = {}
        for name in bundled_templates():
            digest = hash_canonical(canonical_json(load_template_file(str(folder.joinpath(f"{name}.json")))))
            table[digest] = (*table.get(digest, ()), name)
        _BUNDLED_HASHES = table
    return _BUNDLED_HASHES


def _bundled(name: str) -> CompiledTemplate | None:
    """The bundled template ``name`` from its generated module, or None when there is no
    such module for this respc version (then its JSON is compiled instead)."""
    ident = _ident(name)
    compiled = _BY_NAME.get(ident)
    if compiled is not None:
        return compiled
    module = loader.import_bundled(ident)
    if module is None or getattr(module, "RESPC_VERSION", None) != __version__:
        return None
    if name not in _bundled_hashes().get(getattr(module, "TEMPLATE_HASH", None), ()):
        return None  # generated from another version of the template (a checkout being edited)
    source = resources.files("respc.generated").joinpath(f"{ident}.py").read_text("utf-8")
    compiled = _BY_NAME[ident] = CompiledTemplate(module, source, name=name)
    return compiled


class UnknownTemplate(TemplateError, KeyError):
    """No bundled template has this name (a TemplateError, and a KeyError as before)."""

    __str__ = TemplateError.__str__


class TemplateArgumentError(TemplateError, TypeError):
    """What was passed as the template is of no type a template can be (a TypeError, and a
    TemplateError as before)."""


def load(name: str) -> CompiledTemplate:
    """A bundled model template by name (``"qwen3"``, ``"gpt-oss"``, ...), from its generated module.

    A template dict equal to a bundled one gets the same module from ``compile_template``.
    """
    if not isinstance(name, str):
        hint = ""
        if isinstance(name, (dict, os.PathLike)):
            hint = "; compile a template dict or file with respc.compile_template()"
        raise TypeError(
            "load() takes a bundled template's name (a str; see respc.bundled_templates()), "
            f"got {type(name).__name__}{hint}"
        )
    ident = _ident(name)
    compiled = _BY_NAME.get(ident)
    if compiled is not None:
        return compiled
    names = {_ident(n): n for n in bundled_templates()}
    if ident not in names:
        close = difflib.get_close_matches(ident, list(names), n=4, cutoff=0.5)
        hint = f"did you mean {', '.join(repr(names[c]) for c in close)}? " if close else ""
        raise UnknownTemplate(
            str(name),
            f"no bundled template of this name; {hint}the bundled ones are listed by `respc list` "
            f"({len(names)}); for a template file pass its path (a pathlib.Path, or a str ending in "
            f"'.json' or holding a path separator: {os.path.join('.', str(name))!r}); a bare name is "
            "only ever a bundled name",
        )
    compiled = _bundled(names[ident])
    if compiled is None:  # no generated module (or one from another respc version): compile the JSON
        path = resources.files("respc.templates").joinpath(f"{names[ident]}.json")
        shared = compile_template(load_template_file(str(path)))
        # its own object under its own name (another name may share the module)
        compiled = CompiledTemplate(shared.module, shared._source, name=names[ident], formatted=shared._formatted)
        _BY_NAME[ident] = compiled
    return compiled


def parse_response(
    text: str | list[str],
    template: dict | str | os.PathLike | CompiledTemplate,
    *,
    prefix: str | list[str] | None = None,
    tools: Tools = None,
    on_malformed: str = "raise",
    regex_timeout: float | None = REGEX_TIMEOUT,
    regex_budget: float | None = REGEX_BUDGET,
):
    """Parse whole model output(s) into message dict(s).

    ``text`` a str gives a dict; a list of str gives a list. ``prefix`` (required;
    ``""`` opts out) is the chat prompt before the generation: a str used for every
    text, or a list with one prefix per text. ``tools`` types tool-call arguments.
    ``on_malformed="collect"`` returns ``(message, errors)`` instead of raising on a
    region whose content fails to parse, and ``regex_timeout`` / ``regex_budget`` bound a
    regex that may backtrack without bound, per call / per parse (see CompiledTemplate.parse
    and .parser).
    """
    if prefix is None:
        raise ValueError(PREFIX_REQUIRED)
    return compile_template(template).parse(
        text,
        prefix=prefix,
        tools=tools,
        on_malformed=on_malformed,
        regex_timeout=regex_timeout,
        regex_budget=regex_budget,
    )


def get_response_parser(
    template: dict | str | os.PathLike | CompiledTemplate,
    *,
    prefix: str | None = None,
    tools: Tools = None,
    spans: bool = False,
    on_malformed: str = "raise",
    regex_timeout: float | None = REGEX_TIMEOUT,
    regex_budget: float | None = REGEX_BUDGET,
) -> ParserBase:
    """A streaming parser for one generation (see :class:`ResponseParser` and
    CompiledTemplate.parser for ``spans``, ``on_malformed``, ``regex_timeout`` and ``regex_budget``)."""
    return compile_template(template).parser(
        prefix=prefix,
        tools=tools,
        spans=spans,
        on_malformed=on_malformed,
        regex_timeout=regex_timeout,
        regex_budget=regex_budget,
    )


class _ResponseParserMeta(type):
    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, ParserBase)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, ParserBase)


class ResponseParser(metaclass=_ResponseParserMeta):
    """``ResponseParser(template, prefix, *, tools=None)``: a streaming parser.

    Returns an instance of the template's generated ``Parser`` class::

        parser = ResponseParser(template, prefix=prompt)
        render(parser.initial_events)
        for chunk in stream:
            render(parser.feed(chunk))
        message, final_events = parser.finalize()
    """

    def __new__(  # type: ignore[misc]
        cls,
        template: Any,
        prefix: str | None = None,
        *,
        tools: Tools = None,
        spans: bool = False,
        on_malformed: str = "raise",
        regex_timeout: float | None = REGEX_TIMEOUT,
        regex_budget: float | None = REGEX_BUDGET,
    ) -> ParserBase:
        return compile_template(template).parser(
            prefix=prefix,
            tools=tools,
            spans=spans,
            on_malformed=on_malformed,
            regex_timeout=regex_timeout,
            regex_budget=regex_budget,
        )
