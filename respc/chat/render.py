"""Render a chat template the way transformers' ``apply_chat_template`` does (5.24).

The environment is jinja2's ``ImmutableSandboxedEnvironment`` with ``trim_blocks`` and
``lstrip_blocks``, the loop-controls extension and a ``{% generation %}`` tag that only renders its
body; the globals ``raise_exception``, ``strftime_now``, ``dict`` and ``namespace``; a ``tojson``
filter that keeps non-ASCII text (``ensure_ascii=False``) and takes ``indent``, ``separators`` and
``sort_keys``. Messages get their reasoning under ``reasoning_content`` and ``thinking`` alike, as
transformers aliases them. A render that raises returns None: a probe the template refuses is
skipped, never a crash.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from functools import lru_cache
from typing import Any

_REASONING_KEYS = ("reasoning_content", "thinking", "reasoning")


class ChatTemplateError(ValueError):
    """The chat template does not compile (a jinja2 syntax error), or no chat template was given."""


def _environment(mutable: bool = False):
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment

    class GenerationTag(jinja2.ext.Extension):
        """``{% generation %}...{% endgeneration %}``: renders the body (the assistant mask is not needed here)."""

        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

        def _render(self, caller):
            return caller()

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    now = datetime.now()

    def strftime_now(fmt):
        # one instant for every render here: two renders of a probe differ only where the probe does
        return now.strftime(fmt)

    class Namespace(jinja2.utils.Namespace):
        def __init__(*args, **kwargs):  # noqa: N805  (jinja's Namespace signature)
            self, args = args[0], args[1:]
            attrs = dict(*args, **kwargs)
            for name in attrs:
                Namespace._check(name)
            jinja2.utils.Namespace.__init__(self, attrs)

        def __setitem__(self, name, value):
            Namespace._check(name)
            jinja2.utils.Namespace.__setitem__(self, name, value)

        @staticmethod
        def _check(name):
            if isinstance(name, str) and name.startswith("_"):
                raise jinja2.exceptions.SecurityError(f"namespace attribute {name!r} starts with an underscore")

    class DictFactory:
        def __call__(self, *args, **kwargs):
            return dict(*args, **kwargs)

        def fromkeys(self, *args, **kwargs):
            return dict.fromkeys(*args, **kwargs)

    env = (SandboxedEnvironment if mutable else ImmutableSandboxedEnvironment)(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = DictFactory()
    env.globals["namespace"] = Namespace
    return env


def alias_reasoning(messages: list[dict]) -> list[dict]:
    """Each message with its reasoning under every name templates read it by (as transformers does)."""
    out = []
    for message in messages:
        reasoning = next((message[k] for k in _REASONING_KEYS if message.get(k) is not None), None)
        if reasoning is not None:
            message = {"thinking": reasoning, **message, "reasoning_content": reasoning}
        out.append(message)
    return out


_NOW = datetime.now()


def _undeclared(tree) -> frozenset:
    """The variables a parsed template reads that it never sets (the context it expects): the
    names it loads less those it stores, macro parameters included (jinja's
    ``meta.find_undeclared_variables`` runs the code generator, which costs a second compile)."""
    from jinja2 import nodes

    loaded, stored = set(), set()
    for node in tree.find_all(nodes.Name):
        (loaded if node.ctx == "load" else stored).add(node.name)
    return frozenset(loaded - stored)


@lru_cache(maxsize=2)
def _shared_environment(mutable: bool = False):
    return _environment(mutable)


@lru_cache(maxsize=64)
def _compile(source: str, mutable: bool = False):
    """(the jinja template of ``source``, the variables it reads undeclared), compiled once per
    process (as transformers caches it) from one parse; ``mutable``: in jinja2's mutable sandbox
    (a template that mutates a list it built itself)."""
    env = _shared_environment(mutable)
    tree = env.parse(source)
    reads = _undeclared(tree)  # before compiling: the optimizer may rewrite the tree
    return env.from_string(tree), reads


def _string_arguments(messages: list[dict]) -> list[dict]:
    """``messages`` with each call's arguments as a JSON string (``messages`` itself if none is a dict)."""
    if not any(isinstance((c.get("function") or {}).get("arguments"), dict) for m in messages for c in m.get("tool_calls") or []):
        return messages
    out = []
    for m in messages:
        if m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                f = c.get("function") or {}
                if isinstance(f.get("arguments"), dict):
                    c = {**c, "function": {**f, "arguments": json.dumps(f["arguments"], ensure_ascii=False)}}
                calls.append(c)
            m = {**m, "tool_calls": calls}
        out.append(m)
    return out


def _refused_mutation(exc: Exception) -> bool:
    """Whether ``exc`` is the immutable sandbox refusing a list's or dict's mutating method."""
    import jinja2

    return isinstance(exc, jinja2.exceptions.SecurityError) and bool(
        re.search(r"attribute '(?:append|extend|insert|pop|remove|clear|update|setdefault)' of '(?:list|dict)' object is unsafe", str(exc))
    )


class ChatTemplate:
    """A compiled chat template with the special tokens it is rendered with.

    ``render(messages, tools=..., add_generation_prompt=..., **kwargs)`` returns the text, or None
    when the template raises for that input (``last_error`` then says what it raised)."""

    def __init__(self, source: str, *, bos_token: str = "", eos_token: str = "", **extra: Any):
        if not isinstance(source, str) or not source.strip():
            raise ChatTemplateError("chat_template: empty; pass the chat template's jinja text")
        import jinja2

        try:
            self.template, self.reads = _compile(source)
        except jinja2.exceptions.TemplateSyntaxError as exc:
            raise ChatTemplateError(f"chat_template: line {exc.lineno}: {exc.message}; fix the jinja syntax") from exc
        self.source = source
        self.bos_token = bos_token or ""
        self.eos_token = eos_token or ""
        self.extra = extra
        self.last_error: str | None = None
        # renders that the immutable sandbox refused for a list.append and a mutable one gave
        # (llama.cpp's copies of some templates mutate lists; transformers would raise there)
        self.mutated = 0
        self.string_arguments = 0  # renders that needed the calls' arguments as JSON strings
        self._cache: dict[str, tuple[str | None, str | None]] = {}

    def render(self, messages: list[dict], *, tools: list | None = None, add_generation_prompt: bool = False, **kwargs):
        key = json.dumps([messages, tools, add_generation_prompt, kwargs], sort_keys=True, default=str)
        if key in self._cache:
            text, self.last_error = self._cache[key]
            return text
        context = {"bos_token": self.bos_token, "eos_token": self.eos_token, **self.extra, **kwargs}
        # kwargs a template documents for its callers instead of ``tools`` (Fireworks' ``functions``,
        # the JSON text of the functions, and ``datetime``; SmolLM3's ``xml_tools``), given only
        # where the template reads them
        if "functions" in self.reads and "functions" not in context:
            context["functions"] = json.dumps([t.get("function", t) for t in tools or []], indent=4, ensure_ascii=False)
        if "xml_tools" in self.reads and "tools" not in self.reads and "xml_tools" not in context and tools:
            # SmolLM3's: the tools its prompt lists and asks <tool_call> JSON calls for
            context["xml_tools"] = tools
        if "datetime" in self.reads and "datetime" not in context:
            context["datetime"] = _NOW.strftime("%Y-%m-%d %H:%M:%S")
        def run(template, history=messages):
            return template.render(
                messages=alias_reasoning(json.loads(json.dumps(history))),
                tools=json.loads(json.dumps(tools)) if tools is not None else None,
                documents=None,
                add_generation_prompt=add_generation_prompt,
                **context,
            )

        try:
            text = run(self.template)
        except Exception as exc:  # noqa: BLE001  (a template may raise anything on an input it refuses)
            text = None
            self.last_error = f"{type(exc).__name__}: {exc}"
            if isinstance(exc, TypeError) and _string_arguments(messages) is not messages:
                # a template written for the OpenAI form, the arguments as a JSON string
                # ('\n' + tool_call.function.arguments): rendered with that form
                try:
                    text = run(self.template, _string_arguments(messages))
                    self.string_arguments += 1
                    self.last_error = None
                except Exception as exc2:  # noqa: BLE001
                    self.last_error = f"{type(exc2).__name__}: {exc2}"
            elif _refused_mutation(exc):
                # the template mutates a list it built itself: what it renders is still the
                # model's format, read with a sandbox that allows it
                try:
                    text = run(_compile(self.source, True)[0])
                    self.mutated += 1
                    self.last_error = None
                except Exception as exc2:  # noqa: BLE001
                    self.last_error = f"{type(exc2).__name__}: {exc2}"
        else:
            self.last_error = None
        self._cache[key] = (text, self.last_error)
        return text
