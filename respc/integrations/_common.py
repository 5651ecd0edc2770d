"""What the engine integrations share: which template a tokenizer's model writes with, and
how token ids become the text respc parses. Imports no engine and no transformers."""

from __future__ import annotations

import copy
import json
import os
from typing import Any

from ..api import CompiledTemplate, compile_template, resolve_template
from ..compiler.regexinfo import lookahead_texts, top_alternatives

#: the environment variable naming the template (a bundled name or a JSON file's path)
ENV = "RESPC_TEMPLATE"

#: the field name some templates (on the Hub, in transformers' docs) give the reasoning
THINKING = "thinking"
REASONING = "reasoning_content"


def tokenizer_template(tokenizer: Any) -> dict | None:
    """The ``response_template`` a tokenizer carries: its attribute, else its
    ``init_kwargs`` (what ``tokenizer_config.json`` held), else None."""
    for owner in (tokenizer, getattr(tokenizer, "tokenizer", None)):  # vLLM wraps some tokenizers
        if owner is None:
            continue
        template = getattr(owner, "response_template", None)
        if not isinstance(template, dict):
            template = (getattr(owner, "init_kwargs", None) or {}).get("response_template")
        if isinstance(template, dict):
            return template
    return None


def reasoning_as_reasoning_content(template: dict) -> dict:
    """``template`` with a reasoning field named ``thinking`` renamed ``reasoning_content``
    (in place in the field order), so that it streams as reasoning; any other template as it is."""
    fields = template.get("fields") if isinstance(template, dict) else None
    if not isinstance(fields, dict) or THINKING not in fields or REASONING in fields:
        return template
    out = copy.deepcopy(template)
    out["fields"] = {(REASONING if name == THINKING else name): field for name, field in out["fields"].items()}
    return out


def resolve(tokenizer: Any = None, template: Any = None, *, who: str = "respc") -> CompiledTemplate:
    """The template a model writes with, compiled: ``template`` if given (a dict, a bundled
    name, a path, a CompiledTemplate); else the tokenizer's ``response_template`` (attribute
    or ``init_kwargs``); else ``$RESPC_TEMPLATE`` (a bundled name or a path); else
    ``respc.for_model(tokenizer)`` where respc has it. Raises ValueError naming
    ``RESPC_TEMPLATE`` when none gives one."""
    if template is None and tokenizer is not None:
        template = tokenizer_template(tokenizer)
    if template is None:
        template = os.environ.get(ENV) or None
    if template is None and tokenizer is not None:
        import respc

        for_model = getattr(respc, "for_model", None)
        if for_model is not None:
            try:
                found = for_model(tokenizer)
            except Exception:  # no template detected: the error below says what to do
                found = None
            if found is not None:
                return found
    if template is None:
        raise ValueError(
            f"{who}: no response template for this model: its tokenizer has no `response_template` "
            f"(attribute or tokenizer_config.json) and {ENV} is not set; set {ENV} to a bundled "
            "template's name (`respc list`) or to a template JSON file's path"
        )
    if isinstance(template, (str, os.PathLike)):  # a bundled name or a template file's path
        template = resolve_template(template)
    if isinstance(template, dict):  # (a file's template may name its reasoning `thinking` too)
        template = reasoning_as_reasoning_content(template)
    return compile_template(template)


def decode(tokenizer: Any, token_ids: Any) -> str:
    """``token_ids`` as the engine decodes output: special tokens kept, no cleanup."""
    ids = list(token_ids)
    if not ids:
        return ""
    try:
        return tokenizer.decode(
            ids, skip_special_tokens=False, clean_up_tokenization_spaces=False, spaces_between_special_tokens=False
        )
    except TypeError:
        return tokenizer.decode(ids, skip_special_tokens=False)


def _template_strings(value: Any, out: list[str]) -> list[str]:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for item in value.values():
            _template_strings(item, out)
    elif isinstance(value, list):
        for item in value:
            _template_strings(item, out)
    return out


def special_markers(tokenizer: Any, compiled: CompiledTemplate) -> list[str]:
    """The tokenizer's added/special tokens that the template's delimiters name: written in a
    delimiter literally or regex-escaped, or a whole match of a delimiter pattern
    (``<think(?::opensource)?>``): the markers an engine must not strip from the text."""
    import regex

    tokens: set[str] = set()
    for source in ("get_added_vocab", "all_special_tokens"):
        try:
            value = getattr(tokenizer, source, None)
            value = value() if callable(value) else value
        except Exception:
            value = None
        if value:
            tokens.update(t for t in value if isinstance(t, str) and t)
    if not tokens:
        return []
    strings = _template_strings(compiled.template.get("fields", {}), [])
    strings += _template_strings(compiled.template.get("start_anchor", ""), [])
    strings += _template_strings(compiled.template.get("start_anchor_pattern", ""), [])
    patterns = []
    for text in strings:
        try:
            patterns.append(regex.compile(text))
        except regex.error:
            pass
    found = [
        t
        for t in tokens
        if any(t in s or regex.escape(t) in s for s in strings) or any(p.fullmatch(t) for p in patterns)
    ]
    return sorted(found)


def tool_dicts(tools: Any) -> list[dict] | None:
    """An engine request's tools (pydantic models or dicts) as the Chat Completions tool dicts
    respc types arguments by (Responses API function tools too)."""
    if not tools:
        return None
    out = []
    for tool in tools:
        if hasattr(tool, "model_dump"):
            tool = tool.model_dump(exclude_none=True)
        if not isinstance(tool, dict):
            continue
        if isinstance(tool.get("function"), dict):
            out.append(tool)
        elif tool.get("type") == "function" and isinstance(tool.get("name"), str):  # Responses API
            function = {k: tool[k] for k in ("name", "description", "parameters", "strict") if k in tool}
            out.append({"type": "function", "function": function})
    return out or None


def stream_tools(tools: Any) -> list[dict] | None:
    """The request's tools as respc types arguments by (each one's name and parameters),
    read from an engine's tool models without dumping them (``model_dump`` of a request's
    tools costs more than making the parser); a dict, or a model without a str name, as
    :func:`tool_dicts` has it. Only for parsing: a grammar needs :func:`tool_dicts`."""
    if not tools:
        return None
    out = []
    for tool in tools:
        if isinstance(tool, dict):
            out += tool_dicts([tool]) or ()
            continue
        function = getattr(tool, "function", None)
        if function is None and getattr(tool, "type", None) == "function":
            function = tool  # a Responses API function tool
        name = getattr(function, "name", None)
        if isinstance(name, str) and not isinstance(function, dict):
            parameters = getattr(function, "parameters", None)
            read = {"name": name} if parameters is None else {"name": name, "parameters": parameters}
            out.append({"type": "function", "function": read})
        else:
            out += tool_dicts([tool]) or ()
    return out or None


def stop_texts(tokenizer: Any, token_ids: Any = ()) -> set[str]:
    """The texts of the tokens that end a generation: the tokenizer's eos token, the model's
    generation config's ``eos_token_id`` (read from the tokenizer's folder or the Hugging Face
    cache, never downloaded; once per tokenizer) and ``token_ids`` (a request's own stop
    token ids)."""
    known = getattr(tokenizer, "_respc_stop_texts", None)
    if known is None:
        known = _texts_of(tokenizer, _generation_eos_ids(tokenizer))
        eos = getattr(tokenizer, "eos_token", None)
        if isinstance(eos, str) and eos:
            known.add(eos)
        try:
            tokenizer._respc_stop_texts = known
        except (AttributeError, TypeError):  # a tokenizer that takes no attributes: read again next time
            pass
    return known | _texts_of(tokenizer, token_ids or ()) if token_ids else set(known)


def _generation_eos_ids(tokenizer: Any) -> list:
    """``eos_token_id`` of the model's generation_config.json, beside the tokenizer's files."""
    source = getattr(tokenizer, "name_or_path", None)
    if not isinstance(source, str) or not source:
        return []
    path = os.path.join(source, "generation_config.json")
    if not os.path.isfile(path):
        try:
            from huggingface_hub import try_to_load_from_cache

            hit = try_to_load_from_cache(source, "generation_config.json")
            path = hit if isinstance(hit, str) else ""
        except Exception:  # noqa: BLE001 - no hub library, not a repo id
            return []
    if not path:
        return []
    try:
        with open(path, encoding="utf-8") as f:
            found = json.load(f).get("eos_token_id")
    except (OSError, ValueError, AttributeError):
        return []
    return found if isinstance(found, list) else [found]


def _texts_of(tokenizer: Any, ids: Any) -> set[str]:
    out = set()
    convert = getattr(tokenizer, "convert_ids_to_tokens", None)
    for i in ids:
        if isinstance(i, int) and convert is not None:
            try:
                text = convert(i)
            except Exception:  # noqa: BLE001 - an id out of the vocabulary
                continue
            if isinstance(text, str) and text:
                out.add(text)
    return out


def end_calls_at_stop(tag: dict, stops: set[str]) -> dict:
    """``tag`` (a structural tag of respc's) with each call whose close is a stop token
    (gpt-oss's ``<|call|>``) ending where its body does, the turn ending there: an engine's
    grammar matcher takes a stop token only where the grammar may end, never as a close's
    text, so a tag that writes ``<|call|>`` as its end rejects it. The parser reads the stop
    token back from the token ids."""
    if not stops:
        return tag
    for element in tag.get("format", {}).get("elements", ()):
        if element.get("type") != "triggered_tags":
            continue
        tags = element.get("tags") or []
        ends = [t.get("end") for t in tags]
        # (a close with other ways too, gpt-oss's <|end|> beside <|call|>: the stop token's way)
        if tags and all((bool(set(e) & stops) if isinstance(e, list) else e in stops) for e in ends):
            for t in tags:
                t["end"] = ""
            element["stop_after_first"] = True  # the stop token ends the turn after the call
    return tag


#: how the parser reads ``\s`` (the item a leading ``\s*`` repeats)
_SPACES = "[(IN, [(CATEGORY, CATEGORY_SPACE)])]"


def _whole_literal(pattern: Any) -> str | None:
    """The literal a delimiter pattern matches, when it matches only that (after optional
    leading ``\\s*``, which the literal then stands for); else None."""
    if not isinstance(pattern, str) or not pattern:
        return None
    try:
        import re._parser as sre  # type: ignore[import-not-found]
    except ImportError:  # Python < 3.11
        import sre_parse as sre  # type: ignore[no-redef]
    try:
        items = list(sre.parse(pattern))
    except Exception:  # a pattern of the regex module's own syntax: not read here
        return None
    out: list[str] = []
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif not out and name == "MAX_REPEAT" and arg[0] == 0 and str(list(arg[2])) == _SPACES:
            continue  # leading \s*
        else:
            return None
    return "".join(out) or None


def _opens_a_field(fields: dict, text: str) -> bool:
    """Some field's open may begin with ``text`` (qwen3's reasoning ends where ``<tool_call>``
    opens a call: the end text is not the only way out of the reasoning)."""
    import regex

    for spec in fields.values():
        if not isinstance(spec, dict):
            continue
        if isinstance(spec.get("open"), str) and (spec["open"].startswith(text) or text.startswith(spec["open"])):
            return True
        if isinstance(spec.get("open_pattern"), str):
            try:
                if regex.compile(spec["open_pattern"]).match(text, partial=True) is not None:
                    return True
            except regex.error:
                return True
    return False


def _close_literal(fields: dict, pattern: Any) -> str | None:
    """:func:`_whole_literal` of a close, its alternatives that only look ahead at markers that
    open no field left out (``</think>|(?=<|im_end|>)``: a reply the model cut with its end
    token ends the reasoning there, which forcing ``</think>`` still does)."""
    whole = _whole_literal(pattern)
    if whole is not None or not isinstance(pattern, str):
        return whole
    branches = top_alternatives(pattern)
    if branches is None or len(branches) < 2:
        return None
    kept = []
    for branch in branches:
        texts = lookahead_texts(branch)
        if texts is None or any(not t or _opens_a_field(fields, t) for t in texts):
            kept.append(branch)
    return _whole_literal(kept[0]) if len(kept) == 1 else None


#: per template hash: (reasoning start, reasoning end) literals, or (None, None)
_REASONING_LITERALS: dict[str, tuple[str | None, str | None]] = {}


def reasoning_literals(compiled: CompiledTemplate) -> tuple[str | None, str | None]:
    """The literal texts that open and close the template's reasoning field, when each
    delimiter is exactly one literal (``open``/``close``, or a pattern that matches only one
    literal after optional leading whitespace): ``(None, None)`` when either is a pattern of
    another kind (alternatives, a lookahead close, a class), since then reasoning may begin
    or end without that text. An engine's thinking-token budget counts from the start text
    and forces the end text (vLLM's ``reasoning_start_str`` / ``reasoning_end_str``)."""
    found = _REASONING_LITERALS.get(compiled.hash)
    if found is None:
        field = compiled.template.get("fields", {}).get("reasoning_content")
        start = end = None
        if isinstance(field, dict):
            fields = compiled.template["fields"]
            start = field["open"] if isinstance(field.get("open"), str) and field["open"] else _whole_literal(field.get("open_pattern"))
            end = field["close"] if isinstance(field.get("close"), str) and field["close"] else _close_literal(fields, field.get("close_pattern"))
        found = (start, end) if start and end else (None, None)
        if len(_REASONING_LITERALS) > 256:
            _REASONING_LITERALS.clear()
        _REASONING_LITERALS[compiled.hash] = found
    return found
