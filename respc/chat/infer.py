"""A response template inferred from a chat template alone (``respc.infer``).

The chat template renders the same conversation with one thing changed (``probes``): the
generation prompt gives the start anchor (and a reasoning block it pre-opens); a content-only
reply gives the end-of-turn marker; reasoning + answer against the answer alone gives the
reasoning delimiters; one call, two calls and content + call give the tool-call wrapper, its
body (a JSON object with the name inside or outside it, a JSON list, tagged parameters, a
Python call list) and ids where the template renders them. The template is then **verified**:
every probe and seeded random conversations, rendered by the chat template, must parse back to
their messages through it, whole and streamed; otherwise ``InferError`` names the part that
could not be inferred.
"""

from __future__ import annotations

import ast
import json
import random
import re
import warnings
from dataclasses import dataclass, field
from typing import Any

from . import probes as P
from .render import ChatTemplate, _string_arguments

NAME = r"(?P<name>[^\s<>{}()\[\]\"'=:,|]+)"


class InferError(ValueError):
    """No response template could be inferred: the message names the part (start anchor,
    reasoning, end of turn, tool_calls, verification) and what the renders showed."""


@dataclass
class InferResult:
    template: dict | None
    lines: list = field(default_factory=list)
    error: str | None = None


def lit(text: str) -> str:
    """``text`` as a regex matching it literally (only the characters regex syntax needs escaped)."""
    return re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", text)


def flex(text: str) -> str:
    """``text`` as a regex in which each whitespace run matches any whitespace (``\\s*``)."""
    parts = re.split(r"(\s+)", text)
    return "".join(r"\s*" if part.isspace() else lit(part) for part in parts if part)


def _one_of(items: list[str]) -> str:
    items = [i for i in dict.fromkeys(items) if i]
    return items[0] if len(items) == 1 else "(?:" + "|".join(items) + ")"


def _common_suffix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return a[len(a) - n:] if n else ""


def _name_chars(following: str) -> str:
    """A function name's characters, up to the one the render writes after the name
    (``[^>\\s]+`` before ``>``), or up to whitespace and markup when it writes none."""
    first = following.lstrip()[:1] if not following[:1].isspace() else ""
    if first and not first.isalnum() and first not in "_.-":
        return "[^" + re.sub(r"([\]\\^\-\[])", r"\\\1", first) + r"\s]+"
    return NAME[len("(?P<name>"):-1]


def _name_group(following: str) -> str:
    """The function-name capture (``_name_chars``)."""
    return "(?P<name>" + _name_chars(following) + ")"


def _namespaced(opening: str) -> str:
    """``opening`` as a regex, a namespace right before the name (``functions.``) optional: models
    write the bare name too."""
    m = re.search(r"[A-Za-z_]\w*\.$", opening)
    if m is None:
        return flex(opening)
    return flex(opening[: m.start()]) + "(?:" + lit(m.group(0)) + ")?"


def _find_json(text: str, want) -> tuple[int, int, Any] | None:
    """The first span of ``text`` that is JSON for which ``want(value)`` holds."""
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                value, end = decoder.raw_decode(text, i)
            except ValueError:
                continue
            if want(value):
                return i, end, value
    return None


# a JSON object's last "}": one after which JSON cannot go on (no ",", "]" or "}" follows)
JSON_END = r"(?<=\})(?=\s*(?:[^\s,\]\}]|\Z))\s*"
# the same for a list of JSON objects ("}]"; not a marker's "]" before the list)
JSON_LIST_END = r"(?<=\}\s*\])(?=\s*(?:[^\s,\]\}]|\Z))\s*"
# a Python keyword argument (``city='Paris'``, ``days=3``, ``tags=["a"]``): its value in single
# quotes, or JSON text for the json value parser
PY_KWARG = (
    r'''(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?:'(?P<value>(?:[^'\\]|\\.)*)'|(?P<value>"(?:[^"\\]|\\.)*"'''
    r'''|(?P<arr>\[(?:[^\[\]"']|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|(?&arr))*\])'''
    r'''|(?P<obj>\{(?:[^{}"']|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|(?&obj))*\})|[^,\s()\[\]{}]+))'''
)
#: the token Llama 3 writes before a call when its prompt says "Environment: ipython"
PYTHON_TAG = "<|python_tag|>"
_MARKER = r"(?:<\|[^|<>]+\|>|<[^<>\s]+>|\[[^\[\]\s]+\])"


def _tag_pattern(texts: list[str]) -> str | None:
    """Where the format's tags are a marker, a name and a separator marker (Kimi-K3's
    ``<|open|>think<|sep|>`` ... ``<|close|>think<|sep|>``), the regex of one such tag: a
    separator that ends tags after two kinds of opening marker, never a marker of its own. None
    where the renders show no such tags."""
    texts = list(dict.fromkeys(texts))
    tags = [m for text in texts for m in re.finditer(r"(<\|[^|<>]+\|>)([^<>\n]+?)(<\|[^|<>]+\|>)", text)]
    for sep in dict.fromkeys(m.group(3) for m in tags):
        mine = [m for m in tags if m.group(3) == sep]
        heads = {m.group(1) for m in mine}
        names = {m.group(2).split()[0] for m in mine}
        alone = sum(text.count(sep) for text in texts)  # every one of them ends a tag
        if len(heads) >= 2 and len(names) >= 3 and sep not in heads and alone == len(mine):
            return "(?:" + "|".join(lit(h) for h in sorted(heads)) + r")[^<>\n]*?" + lit(sep)
    return None


def _turn_start(item: P.Rendered) -> bool:
    """Whether the generation prompt's start found again inside ``item``'s reply starts a second
    turn: it names the assistant role, or it is more than one marker, or a turn of another role
    follows it (Cohere's instructions after the reply, ``<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>``).
    A single marker inside the reply is not one: HyperCLOVA X's ``<|im_start|>`` before its
    ``assistant`` message, Kimi-K3's ``<|open|>`` that opens every tag."""
    header = item.first_turn.turn_header
    rest = item.output[len(item.first_turn.output) + len(header):]
    if re.search(r"assistant", header, re.IGNORECASE) or not re.fullmatch(r"\s*" + _MARKER + r"\s*", header):
        return True
    return bool(re.match(r"\s*(?:<\|?|\[)?(?:system|user|tool|developer)(?![a-z])", rest, re.IGNORECASE))


class _PromptAlways:
    """A chat template that writes its generation prompt whether or not it is asked for (Cohere's
    command-r7b), seen as one that writes it only when asked: a render without the generation
    prompt loses the part the prompt adds. That part is the common end of a one-message render
    and a render with an answer after it, from the last place the user's turn's first marker
    occurs there."""

    def __init__(self, chat: ChatTemplate, lines: list):
        self.chat = chat
        self.lines = lines
        self._tails: dict[str, str] = {}

    def __getattr__(self, name):
        return getattr(self.chat, name)

    @staticmethod
    def applies(chat: ChatTemplate) -> bool:
        history = [P.USER]
        with_prompt = chat.render(history, tools=P.TOOLS, add_generation_prompt=True)
        return with_prompt is not None and with_prompt == chat.render(history, tools=P.TOOLS, add_generation_prompt=False)

    def tail(self, tools, kwargs) -> str:
        key = json.dumps([tools is None, kwargs], sort_keys=True)
        if key not in self._tails:
            one = self.chat.render([P.USER], tools=tools, **kwargs) or ""
            two = self.chat.render([P.USER, {"role": "assistant", "content": P.ANSWER}], tools=tools, **kwargs) or ""
            shared = _common_suffix(one, two)
            i = one.find(P.USER["content"])
            # the user turn's header ("<|START_OF_TURN_TOKEN|><|USER_TOKEN|>", "<|im_start|>user\n"):
            # its first marker starts every turn
            header = re.search(r"(?:" + _MARKER + r"[^<>\[\]\n]*\s*)+$", one[:i]) if i > 0 else None
            first = re.match(_MARKER, header.group(0)).group(0) if header else ""
            tail = shared[shared.rfind(first):] if first and first in shared else ""
            closer = re.match(_MARKER, tail)
            if i > 0 and closer and one[i + len(P.USER["content"]):] == tail:
                # all that follows the user's text: its turn's own close comes first
                tail = tail[closer.end():]
            self._tails[key] = tail
            self.lines.append(f"generation prompt: written whether or not it is asked for ({tail!r}{', ' + str(kwargs) if kwargs else ''}): left out of the renders without it")
        return self._tails[key]

    def render(self, messages, *, tools=None, add_generation_prompt=False, **kwargs):
        text = self.chat.render(messages, tools=tools, add_generation_prompt=add_generation_prompt, **kwargs)
        if text is None or add_generation_prompt:
            return text
        tail = self.tail(tools, kwargs)
        return text[: len(text) - len(tail)] if tail and text.endswith(tail) else text


class _Rewrite:
    """A chat template rendered with its messages rewritten (``rewrite``) as the model writes them;
    every other attribute is the template's."""

    note = ""

    def __init__(self, chat: ChatTemplate, lines: list):
        self.chat = chat
        lines.append(self.note)

    def __getattr__(self, name):
        return getattr(self.chat, name)

    def rewrite(self, messages: list) -> list:
        return messages

    def render(self, messages, **kwargs):
        return self.chat.render(self.rewrite(messages), **kwargs)


class _ReprArguments(_Rewrite):
    """A chat template that writes a call's arguments with jinja's ``|string`` (a Python dict's
    repr, ``{'city': 'Paris'}``, inside otherwise JSON text: vLLM's InternLM2 template), where the
    model writes JSON: rendered with the arguments as JSON text, which ``|string`` leaves as it is."""

    note = "tool_calls: the template writes the arguments as a Python dict (|string); rendered with them as JSON text, as the model writes them"

    @staticmethod
    def applies(chat: ChatTemplate) -> bool:
        if not re.search(r"arguments\s*\|\s*string", chat.source):
            return False
        message = {"role": "assistant", "content": "", "tool_calls": [P.WEATHER]}
        text = chat.render([P.USER, message], tools=P.TOOLS) or ""
        as_json = chat.render(_string_arguments([P.USER, message]), tools=P.TOOLS) or ""
        args = P.WEATHER["function"]["arguments"]
        return str(args) in text and json.dumps(args, ensure_ascii=False) in as_json

    def rewrite(self, messages: list) -> list:
        return _string_arguments(messages)


class _BlockReasoning(_Rewrite):
    """A chat template that renders reasoning only from typed blocks of a message's content, never
    from ``reasoning_content`` (Apertus's ``message.content.blocks``, ``block.type == 'thoughts'``
    and ``'response'``, each with its ``block.text``): rendered with a message's reasoning and
    content as those blocks, which the template's text names."""

    def __init__(self, chat: ChatTemplate, spec: tuple, lines: list):
        self.key, self.think, self.answer, self.attr = spec
        where = f"content.{self.key}" if self.key else "content"
        self.note = f"reasoning: rendered only from the message's {where} blocks of type {self.think!r} (and {self.answer!r}, each block's {self.attr!r}), as the template's text reads them"
        super().__init__(chat, lines)

    @staticmethod
    def spec(chat: ChatTemplate) -> tuple | None:
        """(container key or None for a list content, thought type, answer type, text attribute)."""
        src = chat.source
        m = re.search(r"(\w+)\.type\s*==\s*['\"](\w*(?:thought|think|reason)\w*)['\"]", src, re.IGNORECASE)
        if m is None:
            return None
        var = m.group(1)
        answer = re.search(r"\b" + var + r"\.type\s*==\s*['\"](response|text|answer|output|content)['\"]", src)
        attr = next((a for a in re.findall(r"\b" + var + r"\.(\w+)", src[m.end():]) if a != "type"), None)
        loop = re.search(r"for\s+" + var + r"\s+in\s+([\w.]+)", src)
        if not (answer and attr and loop):
            return None
        container = loop.group(1)
        bound = re.search(r"set\s+" + re.escape(container) + r"\s*=\s*([\w.]+)", src)
        path = bound.group(1) if bound else container
        if re.fullmatch(r"\w+\.content", path):
            key = None
        elif re.fullmatch(r"\w+\.content\.\w+", path):
            key = path.rsplit(".", 1)[1]
        else:
            return None
        return key, m.group(2), answer.group(1), attr

    @classmethod
    def applies(cls, chat: ChatTemplate) -> tuple | None:
        spec = cls.spec(chat)
        if spec is None:
            return None
        message = {"role": "assistant", "reasoning_content": P.REASONING, "content": P.ANSWER}
        plain = chat.render([P.USER, message], tools=P.TOOLS) or ""
        blocks = chat.render([P.USER, cls._as_blocks(message, spec)], tools=P.TOOLS) or ""
        return spec if P.REASONING not in plain and P.REASONING in blocks and P.ANSWER in blocks else None

    @staticmethod
    def _as_blocks(message: dict, spec: tuple) -> dict:
        key, think, answer, attr = spec
        out = {k: v for k, v in message.items() if k not in ("reasoning_content", "thinking")}
        items = [{"type": think, attr: message["reasoning_content"]}]
        if message.get("content"):
            items.append({"type": answer, attr: message["content"]})
        out["content"] = {key: items} if key else items
        return out

    def rewrite(self, messages: list) -> list:
        spec = (self.key, self.think, self.answer, self.attr)
        return [self._as_blocks(m, spec) if m.get("role") == "assistant" and m.get("reasoning_content") else m for m in messages]


class _BareValues(_Rewrite):
    """A chat template that writes a Python call's string values bare (``"%s" | format(value)``:
    ``get_weather(city=Paris, days=3)``, not Python: vLLM's Llama 3.2 pythonic template), where
    the model writes Python literals: rendered with the string values as their quoted JSON text,
    which ``%s`` leaves as it is."""

    note = "tool_calls: the template writes Python calls' string values unquoted; rendered with them quoted, as the model writes them"

    @staticmethod
    def _quoted(messages: list) -> list:
        out = []
        for m in messages:
            if m.get("tool_calls"):
                m = dict(m, tool_calls=[
                    dict(c, function=dict(c["function"], arguments={k: json.dumps(v, ensure_ascii=False) if isinstance(v, str) else v for k, v in c["function"]["arguments"].items()}))
                    if isinstance(c.get("function", {}).get("arguments"), dict) else c
                    for c in m["tool_calls"]
                ])
            out.append(m)
        return out

    @classmethod
    def applies(cls, chat: ChatTemplate) -> bool:
        message = {"role": "assistant", "content": "", "tool_calls": [P.WEATHER]}
        text = chat.render([P.USER, message], tools=P.TOOLS) or ""
        if not re.search(r"get_weather\(\s*city\s*=\s*Paris\b", text):
            return False
        quoted = chat.render(cls._quoted([P.USER, message]), tools=P.TOOLS) or ""
        return bool(re.search(r'get_weather\(\s*city\s*=\s*"Paris"', quoted))

    def rewrite(self, messages: list) -> list:
        return self._quoted(messages)


def _as_the_model_writes(chat, lines: list):
    """``chat`` wrapped so that it renders what the model writes: arguments the template writes with
    ``|string`` as JSON text, string values it writes bare in Python calls quoted, reasoning it
    reads only from content blocks as those blocks."""
    layers, inner = set(), chat
    while hasattr(inner, "chat") and not isinstance(inner, ChatTemplate):
        layers.add(type(inner))
        inner = inner.chat
    if _ReprArguments not in layers and _ReprArguments.applies(chat):
        chat = _ReprArguments(chat, lines)
    if _BareValues not in layers and _BareValues.applies(chat):
        chat = _BareValues(chat, lines)
    if _BlockReasoning not in layers:
        spec = _BlockReasoning.applies(chat)
        if spec is not None:
            chat = _BlockReasoning(chat, spec, lines)
    return chat


class _Infer:
    def __init__(self, chat: ChatTemplate):
        self.chat = chat
        self.content_wrap: tuple[str, str] | None = None
        self.turn_close, self.stops, self.content_close = "", [], ""
        self.marker = _MARKER  # (with the format's compound tags in front, once the renders are read)
        self.lines: list[str] = []
        self.rendered: dict[str, P.Rendered] = {}
        extra = [
            # reasoning a template renders only next to calls, with thinking on (command-r7b)
            P.Probe("thinking_on_reasoning_call", {"role": "assistant", "reasoning_content": P.REASONING, "content": "", "tool_calls": [P.WEATHER]}, kwargs={"enable_thinking": True})
        ]
        for probe in P.base_probes() + extra:
            result = P.render_probe(chat, probe)
            if isinstance(result, str):
                self.lines.append(f"probe {probe.name}: skipped ({result})")
            else:
                if result.first_turn is not None and _turn_start(result):
                    # the render holds two assistant turns (content after calls as a turn of
                    # its own): the model writes the first
                    result = result.first_turn
                self.rendered[probe.name] = result
                self.lines.append(f"probe {probe.name}: {result.output!r}" + (f" ({result.note})" if result.note else ""))

    def read_tags(self) -> None:
        tag = _tag_pattern([r.output for r in self.rendered.values()])
        if tag:
            self.marker = "(?:" + tag + "|" + _MARKER + ")"
            self.say(f"markers: the format's tags are compound ({tag}): each is read as one marker")

    def phrase(self, text: str) -> str:
        """``text`` as a regex; for a phrase the template's text names (``Here is my response:``)
        a model may write the contraction (``Here's``)."""
        if not getattr(self, "phrases", False):
            return lit(text)
        return "(?: is|'s) ".join(lit(part) for part in text.split(" is "))

    def say(self, line: str) -> None:
        self.lines.append(line)

    # --- the parts -------------------------------------------------------------------------
    def generation_prompt(self, **kwargs) -> str | None:
        history = [P.USER]
        with_prompt = self.chat.render(history, tools=P.TOOLS, add_generation_prompt=True, **kwargs)
        without = self.chat.render(history, tools=P.TOOLS, add_generation_prompt=False, **kwargs)
        if with_prompt is None or without is None:
            with_prompt = self.chat.render(history, add_generation_prompt=True, **kwargs)
            without = self.chat.render(history, add_generation_prompt=False, **kwargs)
        if with_prompt is None or without is None:
            if kwargs:
                return None
            raise InferError(f"start anchor: the chat template raises on a one-message conversation ({self.chat.last_error})")
        if with_prompt.startswith(without):
            gen = with_prompt[len(without):]
        else:  # a template that ends a prompt without generation prompt with eos_token
            cut = P.common_prefix(with_prompt, without)
            while cut > 0 and not (with_prompt[cut - 1].isspace() or with_prompt[cut - 1] in ">]}"):
                cut -= 1
            gen = with_prompt[cut:]
        if not gen.strip():
            # no generation prompt: the assistant turn starts after the user turn's last marker
            # (before an empty reasoning block the prompt ends with: thinking off's "<think></think>")
            m = re.search(r"(<\|[^|<>]+\|>|<[^<>\s]+>|\[[^\[\]\s]+\])\s*(?:<([^<>/\s]+)>\s*</\2>\s*)?$", with_prompt)
            if m is None:
                raise InferError("start anchor: add_generation_prompt=True adds nothing and the prompt ends with no marker")
            gen = with_prompt[m.start():]
        return gen

    def anchor_and_tails(self) -> tuple[str, dict]:
        gens = {"default": self.generation_prompt()}
        if "enable_thinking" in self.chat.source:
            for flag in (True, False):
                g = self.generation_prompt(enable_thinking=flag)
                if g is not None:
                    gens[f"thinking {'on' if flag else 'off'}"] = g
        anchor = gens["default"]
        for g in gens.values():
            anchor = anchor[: P.common_prefix(anchor, g)]
        while anchor and anchor != gens["default"] and not (anchor[-1].isspace() or anchor[-1] in ">]|}"):
            anchor = anchor[:-1]
        tails = {k: g[len(anchor):] for k, g in gens.items()}
        for k, g in gens.items():
            self.say(f"generation prompt ({k}): {g!r}")
        return anchor, tails

    def infer(self) -> dict:
        self.read_tags()
        anchor, tails = self.anchor_and_tails()
        gen = anchor + tails["default"]
        answer = self.rendered.get("answer") or self.rendered.get("answer_no_tools")
        if answer is None:
            raise InferError("end of turn: the chat template renders no content-only reply")
        out = answer.output
        if P.ANSWER not in out:
            raise InferError(f"content: the reply's content is not in its render {out!r}")
        before, after = out[: out.index(P.ANSWER)], out[out.index(P.ANSWER) + len(P.ANSWER):]
        eot = after.strip()
        content_close = ""
        call_out = (self.rendered.get("call") or self.rendered.get("thinking_on_call") or P.Rendered(None, "", "", {})).output.rstrip()
        if eot and not call_out.endswith(eot):
            # a call's render ends with only the last markers of it: the first ones close the
            # content (command-r7b's "<|END_RESPONSE|>", then the turn's "<|END_OF_TURN_TOKEN|>")
            for m in re.finditer(self.marker, eot):
                if m.start() > 0 and call_out.endswith(eot[m.start():]):
                    content_close, eot = eot[: m.start()].strip(), eot[m.start():]
                    self.say(f"content closes with {content_close!r}")
                    break
        # what follows the end-of-turn marker (a newline, the template's eos) is left to [\s\S]*
        self.say(f"end of turn: {eot!r}")
        self.turn_close = self._turn_close()
        ends = [self.closing(eot)] if eot else []
        if self.chat.eos_token and self.chat.eos_token not in eot:
            ends.append(lit(self.chat.eos_token))
        self.ends = ends
        self.eot, self.content_close = eot, content_close
        fields: dict[str, dict] = {}
        reasoning = self.reasoning(gen, before, tails)
        pre_open = None
        if reasoning is not None:
            open_, close = reasoning
            from_start = not open_
            if from_start:
                # the reasoning starts the reply: the generation prompt opens it, and the anchor is
                # the marker the prompt writes before its generation prompt
                prompt = self.chat.render([P.USER], tools=P.TOOLS, add_generation_prompt=True) or ""
                m = re.search(r"(<\|[^|<>]+\|>|<[^<>\s]+>|\[[^\[\]\s]+\])\s*$", prompt[: len(prompt) - len(gen)])
                if not (prompt.endswith(gen) and m and gen.strip()):
                    raise InferError(f"reasoning: it starts the reply, and the prompt has no marker before its generation prompt {gen!r}")
                open_, anchor = gen.strip(), m.group(0)
                self.say(f"reasoning: opened by the generation prompt {open_!r}; the start anchor is the marker before it, {anchor!r}")
            fields["reasoning_content"] = {
                "open_pattern": r"\s*" + self.phrase(open_),
                "close_pattern": self.phrase(close),
                "content": "text",
            }
            if not from_start and open_ in gen and gen.index(open_) <= len(anchor):
                pre_open = gen[gen.index(open_):]
                anchor = gen[: gen.index(open_)]
                self.say(f"the generation prompt pre-opens the reasoning ({pre_open!r})")
        content_open = before.strip()
        empty = re.fullmatch(r"(<([^<>/\s]+)>)\s*(</\2>)", content_open)
        if reasoning is None and empty:
            # an empty reasoning block rendered before every answer
            reasoning = empty.group(1), empty.group(3)
            fields["reasoning_content"] = {"open_pattern": r"\s*" + lit(reasoning[0]), "close_pattern": lit(reasoning[1]), "content": "text"}
            self.say(f"reasoning: an empty {content_open!r} is rendered before the answer")
        if reasoning is not None and content_open:
            # an empty reasoning block rendered before the content
            content_open = re.sub(r"^\s*(?:" + lit(reasoning[0]) + r")?\s*" + lit(reasoning[1]), "", before).strip()
        if not anchor.strip():
            raise InferError(f"start anchor: the generation prompt {gen!r} has no marker to anchor on")
        self.gen, self.preopened_call, self.call_turn = gen, "", ""
        tool_field, outer_close = self.tool_calls(before)
        if tool_field is not None and not self.call_turn:
            turn = self._described_call_turn(anchor)
            if turn is not None:
                # also a call turn the prompt describes (GigaChat 3.1's "`function call` role")
                tool_field["open_pattern"] = "(?:" + tool_field["open_pattern"] + r"|\s*" + turn[0] + r"\s*" + flex(turn[1]) + ")"
                self.call_turn = turn
        if self.call_turn and self.call_turn[1] and tool_field is not None:
            # that end of turn ends the content only where no call turn follows it
            end_rx, rest = self.call_turn
            self.ends[:] = [e + r"(?!\s*" + flex(rest) + ")" if e == end_rx else e for e in self.ends]
            self.say(f"tool_calls: written as a turn of its own ({rest!r}) after the end-of-turn marker")
        if self.preopened_call:
            # the marker opens every message: the anchor stops before it, the content's open has it
            anchor = anchor[: len(anchor) - len(self.preopened_call)] if anchor.endswith(self.preopened_call) else anchor
            if content_open and tool_field is not None:
                # a call's name is not the content's recipient (">>>all")
                marker = flex(self.preopened_call)
                tool_field["open_pattern"] = tool_field["open_pattern"].replace(marker, marker + "(?!" + lit(content_open) + r"\s)", 1)
            content_open = self.preopened_call + content_open
        if tool_field is not None:
            fields["tool_calls"] = tool_field
            if reasoning is not None:
                # a call written before the reasoning closes ends it
                heads = [h for h in dict.fromkeys([self.call_head, *self.inner_heads]) if h]
                if heads:
                    # (the per-call open too, where an outer one may be left out)
                    fields["reasoning_content"]["close_pattern"] += "|(?=" + _one_of([lit(h) for h in heads]) + ")"
        end = _one_of(ends)
        optional_open, plain_open = False, ""
        if content_open and not any(ch in content_open for ch in "<>[]{}|"):
            # a plain text (no marker) the template writes before some contents and not others
            # (vLLM's Hunyuan-A13B: '助手：' + content, but not before a call or without tools):
            # the model may write it or not
            others = [self.rendered[k].output for k in ("answer_no_tools", "content_call") if k in self.rendered]
            optional_open = any(not o.lstrip().startswith(content_open) for o in others)
            if optional_open:
                # the content field stays implicit (its text needs no open) and the plain text
                # closes a (then empty) piece of it, so it is not kept
                self.say(f"content: the plain text {content_open!r} opens some contents and not others: left out where written")
                plain_open, content_open = content_open, ""
        if content_open:
            fields["content"] = {"open_pattern": r"\s*" + lit(content_open), "content": "text"}
            if end or content_close:
                name = P.WEATHER["function"]["name"]
                if content_close and -1 < call_out.find(content_close) < call_out.find(name):
                    # calls follow the content's close (Kimi-K3's response block, then its tools)
                    closes = [lit(content_close), _one_of(self.ends) + r"[\s\S]*"]
                else:
                    closes = [_one_of(([lit(content_close)] if content_close else []) + self.ends) + r"[\s\S]*"]
                if tool_field is not None and self.call_head:
                    closes.append("(?=" + lit(self.call_head) + ")")  # a call after the content ends it
                if reasoning is not None and anchor.strip() and reasoning[1].endswith(anchor.strip()) and reasoning[1] != anchor.strip():
                    # the reasoning closes with the next message's start (muse-glimmer's
                    # "<|eom|><|start|>assistant"): a message of any kind ends there
                    closes.insert(0, lit(reasoning[1]))
                fields["content"]["close_pattern"] = r"\s*" + _one_of(closes)
            self.say(f"content opens with {content_open!r}")
        else:
            spec: dict[str, Any] = {"repeats": True, "join": "\n\n", "content": "text"}
            if end:
                # the marker closing the calls' section also ends the reply
                # the marker closing the calls' section, and a reasoning close written after the
                # calls (a stray one: the reasoning already ended), end a piece of content
                strays = [outer_close] if outer_close else []
                if plain_open:
                    strays.append(lit(plain_open))
                if self.content_wrap:
                    strays += [lit(self.content_wrap[0]), lit(self.content_wrap[1])]
                if content_close:
                    strays.append(lit(content_close))
                if reasoning is not None and tool_field is not None:
                    strays.append(lit(reasoning[1]))
                begin = re.fullmatch(r"\[BEGIN ([^\[\]]+)\]", reasoning[1]) if reasoning is not None else None
                if begin:
                    # a reasoning closed by "[BEGIN X]" opens X: "[END X]" ends it (by convention,
                    # as "</think>" closes "<think>")
                    strays.append(lit(f"[END {begin.group(1)}]"))
                    self.say(f"content: {reasoning[1]!r} begins it, so '[END {begin.group(1)}]' ends it (convention)")
                turn_end = (end + r"[\s\S]*") if end else ""
                spec["close_pattern"] = r"\s*" + (_one_of(strays + [turn_end]) if strays else turn_end)
            fields["content"] = spec
        anchors = [anchor.lstrip() or anchor]  # whitespace before the marker is the previous turn's
        turn = self.rendered.get("multi_turn")
        if turn is not None and (anchor not in turn.prefix or P.TOOL_RESULT in turn.prefix[turn.prefix.rindex(anchor):]):
            # the anchor does not start the turn after a tool result
            # the turn after a tool result starts after another marker (Mistral's [/TOOL_RESULTS])
            prefix = turn.prefix
            if reasoning is not None:
                # a reasoning block the prompt pre-opens or pre-closes is not the turn's start
                prefix = re.sub(r"(?:" + lit(reasoning[0]) + r")?\s*(?:" + lit(reasoning[1]) + r")?\s*$", "", prefix)
            m = re.search(r"(<\|[^|<>]+\|>|<[^<>\s]+>|\[[^\[\]\s]+\])\s*$", prefix)
            if m and m.group(1) not in anchors:
                anchors.append(m.group(1))
                self.say(f"start anchor after a tool result: {m.group(1)!r}")
        if turn is not None:
            # a tool result the template can also write inside the model's own turn, in a branch the
            # probes do not reach (Gemma 4's "<|tool_response>...<tool_response|>" for an assistant
            # message's tool_responses): the model's text starts after its close
            for close in dict.fromkeys(re.findall(r"<\|?/?\w*tool_?(?:response|result)s?\w*\|?>", self.chat.source)):
                closing = close.startswith(("</", "<|/")) or (close.endswith("|>") and not close.startswith("<|"))
                if closing and close not in turn.prefix and close not in anchors:
                    anchors.append(close)
                    self.say(f"start anchor: the template's text closes a tool result with {close!r}, which no probe renders")
        if end:
            # a reply the model cut with its end token (inside the reasoning or a call) ends the
            # open region right before the token, which the content's close then takes: the
            # token is never read into the reasoning or the call (docs/models.md)
            # (inferred fields write their closes as patterns)
            for key in ("reasoning_content", "tool_calls"):
                spec = fields.get(key)
                if spec is not None and "close_pattern" in spec:
                    spec["close_pattern"] += "|(?=" + end + ")"
        template: dict[str, Any] = {"start_anchor": anchors[0] if len(anchors) == 1 else anchors}
        if reasoning is not None and any(t.strip() == reasoning[1] for t in tails.values()):
            # thinking off: the generation prompt closes the reasoning right after the anchor
            self.say(f"start anchor: with thinking off the generation prompt adds {reasoning[1]!r}")
            template = {"start_anchor_pattern": _one_of([lit(a) for a in anchors]) + "(?:" + lit(reasoning[1]) + ")?"}
        template.update({"defaults": {"role": "assistant"}, "fields": fields})
        return template

    def _turn_close(self) -> str:
        """The marker that closes the user's turn (``<|im_end|>``), or ""."""
        text = self.chat.render([P.USER], tools=P.TOOLS) or self.chat.render([P.USER]) or ""
        i = text.find(P.USER["content"])
        m = re.match(r"\s*(" + self.marker + ")", text[i + len(P.USER["content"]):]) if i >= 0 else None
        return m.group(1) if m else ""

    def closing(self, text: str) -> str:
        """``text`` (a close) as a regex; where it is the marker that closes every turn followed by
        more markers (HyperCLOVA X's ``<|im_end|><|endofturn|>``, ``<|im_end|><|stop|>``), those
        are the reply's stop markers, which a model may leave out (an engine stops on them): optional."""
        close = self.turn_close
        rest = text[len(close):].strip() if close and text.startswith(close) else ""
        if rest and re.fullmatch(r"(?:" + self.marker + r"\s*)+", rest):
            if rest not in self.stops:
                self.stops.append(rest)
                self.say(f"end of turn: {rest!r} after {close!r} (which closes every turn) is optional")
            return flex(close) + "(?:" + flex(rest) + ")?"
        return flex(text)

    def reasoning(self, gen: str, before_content: str, tails: dict) -> tuple[str, str] | None:
        item = self.rendered.get("reasoning_answer") or self.rendered.get("thinking_on_reasoning")
        if item is not None and P.REASONING in item.output and P.ANSWER in item.output:
            out = item.output
            i = out.index(P.REASONING)
            j = out.index(P.ANSWER)
            open_ = out[:i].strip()
            between = out[i + len(P.REASONING): j].strip()
            content_open = before_content.strip()
            if content_open and between.endswith(content_open) and between != content_open:
                between = between[: -len(content_open)].strip()
            tags = [m.group(0) for m in re.finditer(self.marker, between)] if self.marker != _MARKER else []
            if len(tags) >= 2 and "".join(tags) == between.replace("\n", ""):
                # compound tags: the first closes the reasoning, the others open the content (which
                # the answer alone renders after the pre-opened block's close)
                between = tags[0]
                self.say(f"reasoning: closed by the tag {between!r}; {''.join(tags[1:])!r} opens the content")
            if not open_:
                # opened by the generation prompt: a marker it ends with, or the text it writes
                # after its last marker (Apriel's "Here are my reasoning steps:")
                prompt_tail = item.prefix[-60:]
                m = re.search(r"(" + (self.marker + "|" if self.marker != _MARKER else "") + r"<[^<>\s]+>|\[[A-Z_]+\])\s*$", prompt_tail)
                marker = re.search(r"(<\|[^|<>]+\|>|<[^<>\s]+>|\[[^\[\]\s]+\])(?![\s\S]*(?:<\|[^|<>]+\|>|<[^<>\s]+>|\[[^\[\]\s]+\]))", gen)
                sentence = gen[marker.end():].strip() if marker else ""
                if m is not None:
                    open_ = m.group(1)
                elif sentence and item.prefix.rstrip().endswith(sentence) and sentence not in out:
                    open_ = sentence
                    self.say(f"reasoning: the generation prompt opens it with the text {sentence!r}")
                else:
                    raise InferError(f"reasoning: rendered {out!r} with no opening marker before it, and the prompt opens none")
            if not between:
                raise InferError(f"reasoning: no marker between the reasoning and the answer in {out!r}")
            self.say(f"reasoning: {open_!r} ... {between!r}")
            return open_, between
        # reasoning rendered only next to calls: its open before it, the marker after it its close
        for name in ("reasoning_call", "thinking_on_reasoning_call"):
            item = self.rendered.get(name)
            if item is None or P.REASONING not in item.output:
                continue
            out = item.output
            i = out.index(P.REASONING)
            open_ = out[:i].strip()
            m = re.match(r"\s*(" + _MARKER + ")", out[i + len(P.REASONING):])
            if open_ and m and re.match(_MARKER + r"[^\n<>\[\]]*$", open_):
                self.say(f"reasoning: rendered only next to calls ({name}): {open_!r} ... {m.group(1)!r}")
                return open_, m.group(1)
        # the template drops reasoning from its history: an empty block in a generation prompt
        # (thinking off), or a pre-opened one, tells its markers
        for tail in tails.values():
            m = re.search(r"(<[^<>/\s]+>)\s*(</[^<>\s]+>)\s*$", gen[: len(gen) - len(tails["default"])] + tail)
            if m and m.group(2) == m.group(1).replace("<", "</", 1):
                self.say(f"reasoning: never rendered; a generation prompt holds the empty block {m.group(0)!r}")
                return m.group(1), m.group(2)
        m = re.search(r"(<([A-Za-z_]+)>)\s*$", gen)
        if m and "think" in m.group(2).lower():
            close = f"</{m.group(2)}>"
            self.say(f"reasoning: never rendered; the generation prompt opens {m.group(1)!r}, closed by convention with {close!r}")
            return m.group(1), close
        # a prompt that tells the model to think between markers (Ministral-3-Reasoning's system
        # prompt: "[THINK]Your thoughts...[/THINK]")
        prompt = next((item.prefix for item in self.rendered.values()), "")
        think = r"(\[(\w*THINK\w*)\])[^\[\]]*?(\[/\2\])|(<(\w*think\w*)>)[^<>]*?(</\5>)"
        found = self._asked_for(think, [("the prompt", prompt)])
        if found:
            return found
        # a prompt that asks for the answer between "[BEGIN X] ... [END X]" after the model's
        # reasoning (Apriel-1.5's system prompt): the reasoning is the reply up to "[BEGIN X]"
        m = re.search(r"\[BEGIN ([^\[\]]+)\][^\[\]]*\[END \1\]", prompt)
        if m and re.search(r"reason|think", prompt, re.IGNORECASE):
            self.say(f"reasoning: never rendered; the prompt asks for the answer in {m.group(0)!r}: the reasoning is the reply before {m.group(0)[: m.group(0).index(']') + 1]!r}")
            return "", f"[BEGIN {m.group(1)}]"
        # the template's own text: a system prompt it writes only for a kwarg the probes do not
        # pass (Granite 3.3's ``thinking``)
        found = self._asked_for(think, [("the template's text", self.chat.source)])
        if found:
            return found
        # ... or one that names the phrases the reasoning and the response come after (Granite
        # 3.2's "Write your thoughts after 'Here is my thought process:' and write your response
        # after 'Here is my response:'")
        m = re.search(
            r"(?:thoughts?|reasoning|thinking)\s+after\s+\\?(['\"])([^'\"\n\\]{3,60})\\?\1[\s\S]{0,120}?(?:response|answer)\s+after\s+\\?(['\"])([^'\"\n\\]{3,60})\\?\3",
            self.chat.source,
            re.IGNORECASE,
        )
        if m:
            self.say(f"reasoning: never rendered; the template's text asks for it after {m.group(2)!r}, the response after {m.group(4)!r} (\" is \" also as \"'s \")")
            self.phrases = True
            return m.group(2), m.group(4)
        self.say("reasoning: never rendered (no reasoning field)")
        return None

    def _asked_for(self, think: str, sources: list) -> tuple[str, str] | None:
        """Think markers a prompt (or the template's own text) asks the model to write."""
        for where, text in sources:
            m = re.search(think, text, re.IGNORECASE)
            if m:
                open_, close = (m.group(1), m.group(3)) if m.group(1) else (m.group(4), m.group(6))
                self.say(f"reasoning: never rendered; {where} asks for it between {open_!r} and {close!r}")
                # the answer in a block of its own named next to it ("write your response
                # between <response></response>")
                w = re.search(r"<(\w*(?:response|answer)\w*)>\s*</\1>", text[m.end(): m.end() + 300], re.IGNORECASE)
                if w:
                    self.content_wrap = (f"<{w.group(1)}>", f"</{w.group(1)}>")
                    self.say(f"content: {where} asks for it between {self.content_wrap[0]!r} and {self.content_wrap[1]!r}")
                return open_, close
        return None

    def _described_call_turn(self, anchor: str) -> tuple[str, str] | None:
        """A turn of its own that the prompt says writes the calls ("the name of the function and
        its arguments will be generated next by the `function call` role", GigaChat 3.1, whose
        template writes the call inside the reply): (the end-of-turn marker before it, its header).
        The header is the anchor's with that role for ``assistant``, where the user's turn is
        written the same way; the end-of-turn marker is the one that ends the turn before it."""
        if anchor.count("assistant") != 1:
            return None
        prompt = self.chat.render([P.USER], tools=P.TOOLS, add_generation_prompt=True) or ""
        m = re.search(r"\bby the [`'\"]((?:function|tool) calls?)[`'\"] role\b", prompt, re.IGNORECASE)
        if m is None or anchor.replace("assistant", "user") not in prompt:
            return None
        header = anchor.replace("assistant", m.group(1)).strip()
        user_header = anchor.replace("assistant", "user").strip()
        for end in self.ends:
            if re.search(end + r"\s*" + re.escape(user_header), prompt):
                self.say(f"tool_calls: the prompt says the {m.group(1)!r} role writes them: {header!r} after the end of turn too")
                return end, header
        return None

    def _call_body(self, name: str, head: str) -> tuple[str, str] | None:
        item = self.rendered.get(name)
        if item is None:
            return None
        out = item.output
        if head and out.startswith(head):
            out = out[len(head):]
            if self.content_close and out.lstrip().startswith(self.content_close):
                # the (empty) content's close, written before the calls
                out = out.lstrip()[len(self.content_close):]
        # the end of turn after the call (a template may write the call as a turn of its own after
        # an end-of-turn marker: GigaChat's "<|message_sep|>\n\nfunction call<|role_sep|>")
        n = max(out.find(P.WEATHER["function"]["name"]), 0)
        for end in self.ends:
            m = re.compile(r"\s*" + end).search(out, n)
            if m:
                first = re.search(r"\s*" + end, out[:n])
                if first and not self.call_turn:
                    brace = out.find("{", first.end())
                    stop = min(i for i in (n, brace) if i >= 0)
                    self.call_turn = (end, out[first.end(): stop].strip())
                out = out[: m.start()]
                break
        return out, item.output

    def tool_calls(self, head: str) -> tuple[dict | None, str]:
        self.call_head = ""
        self.inner_heads: list[str] = []
        one = self._call_body("call", head) or self._call_body("reasoning_call", "")
        if one is None:
            described = self._described_calls()
            if described is not None:
                return described, ""
            self.say("tool_calls: the chat template renders no tool call (no tool_calls field)")
            return None, ""
        body = one[0].strip()
        two = self._call_body("two_calls", head)
        two_body = two[0].strip() if two else None
        args = P.WEATHER["function"]["arguments"]
        name = P.WEATHER["function"]["name"]
        if P.ID1 in body:
            self.say("tool_calls: ids are rendered")
        # a JSON list of calls
        found = _find_json(body, lambda v: isinstance(v, list) and v and isinstance(v[0], dict) and name in v[0].values())
        if found:
            return self._json_list(body, found, two_body)
        found = _find_json(body, lambda v: isinstance(v, list) and v and v[0] == {name: args})
        if found:
            return self._keyed_list(body, found)
        found = _find_json(body, lambda v: isinstance(v, dict) and name in v.values() and args in v.values())
        if found:
            return self._json_object(body, found, two_body)
        found = _find_json(body, lambda v: v == args)
        if found and name in body[: found[0]]:
            return self._name_outside(body, found, two_body)
        if re.search(re.escape(name) + r"\s*\(", body):
            return self._pythonic(body, two_body)
        loose = self._loose_json(body)
        if loose is not None:
            spec, outer_close = self._name_outside(body, loose[0], two_body)
            spec["content_args"] = {**loose[1], **spec["content_args"]}
            self.say(f"tool_calls: the arguments are JSON with {loose[1]}")
            return spec, outer_close
        if "city" in body and "Paris" in body:
            return self._tagged(body, two_body)
        raise InferError(f"tool_calls: no known body format in the rendered call {body!r}")

    def _keyed_list(self, body, found):
        """A JSON list of objects keyed by the function name (Apertus's
        ``[{"get_weather": {"city": "Paris"}}]``): each call is read from its key to the object's
        end, the first after the list's open, the others after a comma inside the list."""
        start, end, _ = found
        open_, close = body[:start].strip(), body[end:].strip()
        if not open_:
            raise InferError(f"tool_calls: a JSON list keyed by function names with no marker before it ({body!r})")
        key = r"\s*\{\s*\"(?P<name>[^\"]+)\"\s*:"
        inside = flex(open_) + (r"(?:(?!" + flex(close) + r").)*" if close else r"[^\]]*")
        spec = {
            "open_pattern": r"\s*" + flex(open_) + r"\s*\[" + key + r"|\s*,(?<=" + inside + r",)" + key,
            # the arguments' "}" and then the item's, before the next item or the list's end
            "close_pattern": r"(?<=\})\s*\}(?=\s*(?:,\s*\{|\]))",
            "repeats": True,
            "content": "json",
            "content_args": {"allow_non_json": True},
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        }
        self.call_head = open_
        self.say(f"tool_calls: a JSON list of objects keyed by the function name after {open_!r}")
        # (the list's "]" as the last of the reply closes the section too: a model may stop there)
        return spec, r"\]\s*" + ("(?:" + flex(close) + r"|\Z)" if close else "")

    def _described_calls(self) -> dict | None:
        """Calls the template never renders but its prompt with tools describes: a call marker
        (``<|tool_call|>``) written only when there are tools, followed by a JSON example or
        "a JSON list". The field is checked on calls written that way (``described_*`` probes)."""
        with_tools = self.chat.render([P.USER], tools=P.TOOLS, add_generation_prompt=True) or ""
        without = self.chat.render([P.USER], add_generation_prompt=True) or ""
        marker = next(
            (
                m
                for m in re.finditer(_MARKER, with_tools)
                if re.search(r"(?:tool|function)_?calls?\b", m.group(0), re.IGNORECASE)
                and not re.match(r"<\|?/|\[/", m.group(0))
                and m.group(0) not in without
            ),
            None,
        )
        if marker is None:
            return None
        open_ = marker.group(0)
        closes = [open_.replace("<|", "<|/", 1), open_.replace("<", "</", 1), open_.replace("[", "[/", 1)]
        close = next((c for c in closes if c != open_ and (c in with_tools or c in self.chat.source)), "")
        after = with_tools[marker.end(): marker.end() + 200]
        nxt = re.search(_MARKER, after)
        if nxt and not (close and after.startswith(close, nxt.start())):
            after = after[: nxt.start()]  # the description ends at the next marker (not its close)
        keys = re.findall(r'"(\w+)"\s*:', after[: after.find(close)] if close and close in after else after)
        name_key = keys[0] if keys else "name"
        args_key = next((k for k in keys[1:] if k in ("arguments", "parameters", "args")), "arguments")
        as_list = after.lstrip().startswith("[") or bool(re.match(r"[^.<]{0,40}\b(?:list|array)\b", after, re.IGNORECASE))
        spec: dict[str, Any] = {"open_pattern": r"\s*" + lit(open_), "content": "json"}
        if as_list:
            spec.update({"transform_each": True, "transform": {"type": "function", "function": {"name": "{" + name_key + "}", "arguments": "{" + args_key + "}"}}})
        else:
            spec.update({"repeats": True, "content_args": {"allow_non_json": True}, "transform": {"type": "function", "function": {"name": "{content." + name_key + "}", "arguments": "{content." + args_key + "}"}}})
        if close:
            spec["close_pattern"] = lit(close) + r"\s*"
        elif as_list:
            spec["close_pattern"] = JSON_LIST_END
        else:
            spec["close_pattern"] = JSON_END
        self.call_head = open_
        self.say(f"tool_calls: never rendered; the prompt with tools describes {'a JSON list' if as_list else 'a JSON object'} ({name_key!r}, {args_key!r}) after {open_!r}" + (f", closed by {close!r}" if close else ""))
        # calls written as described, checked with the rest
        eot = self.eot
        for name, calls in (("described_call", [P.WEATHER]), ("described_two_calls", [P.WEATHER, P.TIME])):
            items = [{name_key: c["function"]["name"], args_key: c["function"]["arguments"]} for c in calls]
            if as_list:
                text = open_ + json.dumps(items) + close + eot
            else:
                text = "".join(open_ + json.dumps(i) + close for i in items) + eot
            expected = {"tool_calls": [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]} for c in calls]}
            self.rendered[name] = P.Rendered(P.Probe(name, {}), with_tools, text, expected, "written as the prompt describes")
        return spec

    def _split_two(self, open_: str, close: str, end1: int, pos2: int, two_body: str | None) -> tuple[str, str, str]:
        """(outer open, per-call open, per-call close) from the two-call render: ``end1`` is where
        the first call's body ends and ``pos2`` where the second's starts (the same offsets as in
        the one-call render up to ``end1``). What the one-call render writes after its close that
        the two-call render does not write between the calls is another end of turn."""
        open_, close = open_.strip(), close.strip()
        if two_body is None or pos2 < 0 or pos2 < end1:
            return "", open_, close
        size = len(open_)
        inside = {i for m in re.finditer(_MARKER, open_) for i in range(m.start() + 1, m.end())}
        while size > 0 and not (
            two_body[:pos2].endswith(open_[len(open_) - size:])
            and (size == len(open_) or open_[len(open_) - size - 1].isspace() or open_[len(open_) - size - 1] in ">]|}")
            and open_[len(open_) - size] not in ">]|}"
            and len(open_) - size not in inside  # (not inside a marker: "<|" + "sep|>")
        ):
            size -= 1  # the longest end of the opening, starting where a token starts, before the second call
        inner = open_[len(open_) - size:].strip() if size else ""
        if not inner:
            return "", open_, close
        between = two_body[end1: pos2 - size].strip()
        outer = open_[: len(open_) - size].strip()
        if between and close.startswith(between) and close != between:
            extra = close[len(between):].strip()
            if extra and not outer:
                self.ends.append(lit(extra))
                self.say(f"tool_calls: {extra!r} after the last call ends the turn")
            return outer, inner, between
        return outer, inner, between or close

    def _repeat_wrapper(self, open_: str, close: str, two_body: str | None) -> tuple[str, str, str]:
        """(outer open, inner open, outer close) from the two-call render: where one call's
        wrapper is the per-call one, or holds an outer part written once around the calls."""
        if two_body is None or not open_ or two_body.count(open_) >= 2:
            return "", open_, ""
        name2 = P.TIME["function"]["name"]
        i = two_body.find(name2)
        head2 = two_body[:i]
        # the inner opening is what comes before the second call, from the end of the first
        first_end = head2.rfind(close) + len(close) if close and close in head2 else -1
        inner = head2[first_end:].strip() if first_end >= 0 else ""
        if inner and open_.endswith(inner):
            return open_[: -len(inner)].strip(), inner, ""
        return "", open_, ""

    def _json_object(self, body, found, two_body):
        start, end, value = found
        name_key = next(k for k, v in value.items() if v == P.WEATHER["function"]["name"])
        args_key = next(k for k, v in value.items() if v == P.WEATHER["function"]["arguments"])
        id_key = next((k for k, v in value.items() if v == P.ID1), None)
        open_, close = body[:start].strip(), body[end:].strip()
        if not open_:
            return self._bare_json(body, found)
        close = self._close_between(close, two_body, open_)
        lines = self._lines_section(open_, close, two_body, r"\}", r"(?=\{)")
        if lines is not None:
            spec, head = lines
            self.call_head = head
            self.say(f"tool_calls: JSON objects ({name_key!r}, {args_key!r}) one after another in one {open_!r} ... {close!r}")
            return {**spec, "content": "json", "content_args": {"allow_non_json": True}, "transform": self._object_transform(value, name_key, args_key, id_key)}, ""
        outer, inner, _ = self._repeat_wrapper(open_, close, two_body)
        transform = self._object_transform(value, name_key, args_key, id_key)
        self.call_head = (outer or inner).split()[0] if (outer or inner).split() else ""
        self.say(f"tool_calls: JSON object ({name_key!r}, {args_key!r}) in {open_!r} ... {close!r}")
        opening = r"\s*" + (r"(?:" + flex(outer) + r"\s*)?" if outer else "") + flex(inner)
        spec = {
            "open_pattern": opening,
            "close_pattern": (self.closing(close) + r"\s*") if close else JSON_END,
            "repeats": True,
            "content": "json",
            "content_args": {"allow_non_json": True},
            "transform": transform,
        }
        return spec, self._outer_close(two_body, close)

    @staticmethod
    def _object_transform(value: dict, name_key: str, args_key: str, id_key: str | None) -> dict:
        function = "{content}" if (name_key, args_key) == ("name", "arguments") and len(value) == 2 else {
            "name": "{content." + name_key + "}",
            "arguments": "{content." + args_key + "}",
        }
        transform: dict[str, Any] = {"type": "function", "function": function}
        if id_key is not None:
            transform = {"id": "{content." + id_key + "}", **transform}
            if function == "{content}":
                transform["function"] = {"name": "{content.name}", "arguments": "{content.arguments}"}
        return transform

    def _lines_section(self, open_: str, close: str, two_body: str | None, body_end: str, body_start: str, head: str = "") -> tuple[dict, str] | None:
        """Calls written one after another (whitespace between them) inside one ``open_`` ...
        ``close`` section (MiniMax-M1's ``<tool_calls>`` with a JSON object a line, OLMo 3's
        ``<function_calls>`` with a Python call a line): ``({open_pattern, close_pattern}, head)``,
        or None where the two-call render does not write them so. ``body_end`` is the regex of a
        body's last character, ``body_start`` a lookahead for the next body's start, ``head`` what
        the open reads of a call before its body (a Python call's name and parenthesis, which the
        close's ``)`` then ends)."""
        if not (two_body and open_ and close) or two_body.count(open_) != 1 or two_body.count(close) != 1:
            return None
        if not (two_body.startswith(open_) and two_body.endswith(close)) or not re.search(body_end + r"\s+" + body_start, two_body):
            return None
        consumed = head and body_end.startswith("\\")  # the close reads the body's last character
        end = body_end if consumed else "(?<=" + body_end + ")"
        # the lookbehind ends at the body's last character, the whitespace after it is the open's
        # (a lookbehind ending in a run would read the run back at every position: respc lint)
        inside = lit(open_) + r"(?:(?!" + lit(close) + r")[\s\S])*" + body_end
        spec = {
            "open_pattern": r"(?:\s*" + flex(open_) + r"|(?<=" + inside + r"))\s*" + (head or body_start),
            "close_pattern": end + r"\s*" + flex(close) + r"\s*|" + end + r"(?=\s*" + body_start + ")",
            "repeats": True,
        }
        return spec, open_.split()[0]

    def _close_between(self, close: str, two_body: str | None, open_: str) -> str:
        """The call's close as the two-call render shows it between the calls (the one-call render
        may add a marker after its last call, which is then another end of turn)."""
        if not two_body or not close:
            return close
        name2 = P.TIME["function"]["name"]
        first = open_.split()[0] if open_.split() else open_
        i = two_body.find(name2)
        j = two_body.rfind(first, 0, i) if first else -1
        if j <= 0:
            return close
        between = two_body[:j].rstrip()
        k = len(close)
        while k > 0 and not between.endswith(close[:k]):
            k -= 1
        # the longest start of the close that ends the first call
        if 0 < k < len(close):
            extra = close[k:].strip()
            if extra:
                self.ends.append(lit(extra))
                self.say(f"tool_calls: {extra!r} after the last call ends the turn")
            return close[:k].strip()
        return close

    def _ipython_tag(self, body: str) -> str:
        """``<|python_tag|>``, optional, before a call the template writes bare where its prompt
        says ``Environment: ipython``: Llama 3's prompt format, in which that line is what makes
        the model write the tag before its calls (the templates of Llama 3.2 never write it)."""
        if PYTHON_TAG in body or "<|start_header_id|>" not in self.gen:
            return ""
        prompt = self.chat.render([P.USER], tools=P.TOOLS, add_generation_prompt=True) or ""
        if not re.search(r"^Environment:\s*ipython\s*$", prompt, re.MULTILINE):
            return ""
        self.say(f"tool_calls: the prompt says 'Environment: ipython' (Llama 3): {PYTHON_TAG!r} is optional before a call")
        return r"(?:" + lit(PYTHON_TAG) + r"\s*)?"

    def _bare_json(self, body, found):
        start, end, value = found
        name_key = next(k for k, v in value.items() if v == P.WEATHER["function"]["name"])
        args_key = next(k for k, v in value.items() if v == P.WEATHER["function"]["arguments"])
        if not self.ends:
            raise InferError(f"tool_calls: a bare JSON call and no end-of-turn marker to close it ({body!r})")
        self.call_head = ""
        self.say(f"tool_calls: a bare JSON object ({name_key!r}, {args_key!r})")
        # a marker the template's text writes right before a call's name, in a branch the probes
        # do not reach (Llama 3.1's "<|python_tag|>" + tool_call.name for its built-in tools):
        # the model may write it before a call
        head = ""
        m = re.search(r"""["'](<\|[^|<>"']+\|>)["']\s*\+\s*\(?\s*\w*(?:tool_?call|function)\w*[.\[]""", self.chat.source)
        if m and m.group(1) not in body:
            head = r"(?:" + lit(m.group(1)) + r"\s*)?"
            self.say(f"tool_calls: the template's text writes {m.group(1)!r} before a call in a branch no probe reaches: optional before a call")
        else:
            head = self._ipython_tag(body)
        close = JSON_END
        if "two_calls" not in self.rendered:
            # the template refuses (or never renders) two calls: nothing says how a model separates
            # them; a ";" between two bare JSON calls is a separator, not content
            close = JSON_END + r"(?:;\s*(?=" + head + r"\{))?"
            self.say("tool_calls: the template renders no two calls; a ';' between two bare JSON calls separates them")
        spec = {
            # the name key before any nested object (a "type" key may come first)
            "open_pattern": r"\s*" + head + r"(?=\{[^{}]*\"" + lit(name_key) + r"\"\s*:)",
            "close_pattern": close,
            "repeats": True,
            "content": "json",
            "content_args": {"allow_non_json": True},
            "transform": {"type": "function", "function": {"name": "{content." + name_key + "}", "arguments": "{content." + args_key + "}"}},
        }
        return spec, ""

    def _outer_close(self, two_body, close) -> str:
        if not two_body or not close:
            return ""
        tail = two_body[two_body.rfind(close) + len(close):].strip()
        first = re.match(self.marker, tail)
        if first and tail[first.end():].strip():
            # markers after the section's close (Hy3's "<｜hy_eos｜>", which it writes only after
            # calls): the model may stop after the close; they end the turn
            return flex(first.group(0)) + "|" + flex(tail[first.end():].strip()) + r"[\s\S]*"
        return flex(tail) if tail else ""

    def _json_list(self, body, found, two_body):
        start, end, value = found
        item = value[0]
        name_key = next(k for k, v in item.items() if v == P.WEATHER["function"]["name"])
        args_key = next((k for k, v in item.items() if v == P.WEATHER["function"]["arguments"]), None)
        if args_key is None:
            raise InferError(f"tool_calls: a JSON list whose item holds no arguments object ({body!r})")
        id_key = next((k for k, v in item.items() if v == P.ID1), None)
        open_, close = body[:start].strip(), body[end:].strip()
        transform: dict[str, Any] = {"type": "function", "function": {"name": "{" + name_key + "}", "arguments": "{" + args_key + "}"}}
        if id_key is not None:
            transform = {"id": "{" + id_key + "}", **transform}
        opening = r"\s*" + (flex(open_) if open_ else r"(?=\[\s*\{)")
        if id_key is not None and id_key.isidentifier():
            # a model may leave an item's id out: the item's own key wins, else this empty
            # capture (the id is then "", as where the id sits between a name and its arguments)
            opening += "(?P<" + id_key + ">)"
        spec: dict[str, Any] = {
            "open_pattern": opening,
            "content": "json",
            "transform_each": True,
            "transform": transform,
        }
        if close:
            spec["close_pattern"] = self.closing(close) + r"\s*"
        else:
            spec["close_pattern"] = JSON_LIST_END  # text after the list is content
        self.call_head = open_.split()[0] if open_ else ""
        self.say(f"tool_calls: a JSON list of ({name_key!r}, {args_key!r}) after {open_!r}")
        return spec, ""

    def _name_outside(self, body, found, two_body):
        start, end, _ = found
        name = P.WEATHER["function"]["name"]
        n = body.rfind(name, 0, start)
        pre, mid, post = body[:n].strip(), body[n + len(name): start], body[end:].strip()
        lead = len(body) - len(body.lstrip())
        pos2 = two_body.find(P.TIME["function"]["name"]) if two_body else -1
        outer, inner, post = self._split_two(body[:n], body[end:], end - lead, pos2, two_body)
        if not pre:
            # the generation prompt writes the first call's marker (Functionary v3.2's ">>>", which
            # opens every message): the marker the two-call render writes before the second call
            between = two_body[end - lead: pos2].strip() if two_body and pos2 > end - lead else ""
            if between and self.gen.endswith(between) and not self.preopened_call:
                self.preopened_call = between
                self.say(f"tool_calls: the generation prompt writes the first call's marker {between!r}")
                return self._name_outside(between + body, (start + len(between), end + len(between), None), between + two_body)
            raise InferError(f"tool_calls: a call with no marker before its name ({body!r})")
        mid_rx = flex(mid)
        with_id = P.ID1 in mid
        if with_id:
            a, b = mid.split(P.ID1, 1)
            # a model may leave the id out: the group then captures "" (a transform needs it defined)
            mid_rx = r"(?:" + flex(a) + r")?(?P<id>[^\s\[\]<>{}\"]*)" + flex(b)
            self.say(f"tool_calls: the id is written between the name and the arguments ({mid!r})")
        elif two_body is not None:
            # a part between the name and the arguments that differs from call to call (an index)
            m2 = re.search(re.escape(P.TIME["function"]["name"]) + r"(.*?)\{", two_body, re.S)
            if m2 and m2.group(1) != mid:
                mid_rx = re.sub(r"\d+", r"\\d+", flex(mid))
        opening = r"\s*" + (r"(?:" + flex(outer) + r"\s*)?" if outer else "") + _namespaced(inner) + _name_group(mid) + mid_rx
        self.call_head = (outer or inner).split()[0]
        if outer and inner.split():
            self.inner_heads.append(inner.split()[0])
        self.say(f"tool_calls: name outside a JSON body: {pre!r} NAME {mid!r} ARGS {post!r}")
        spec = {
            "open_pattern": opening,
            "close_pattern": (self.closing(post) + r"\s*") if post else JSON_END,
            "repeats": True,
            "content": "json",
            "content_args": {"allow_non_json": True},
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        }
        if with_id:
            spec["transform"] = {"id": "{id}", **spec["transform"]}
        return spec, self._outer_close(two_body, post)

    def _pythonic(self, body, two_body):
        i = body.find("[")
        j = body.rfind("]")
        if i < 0 or j < i:
            return self._python_lines(body, two_body)
        try:
            node = ast.parse(body[i: j + 1], mode="eval").body
        except SyntaxError:
            raise InferError(f"tool_calls: the call list is not Python ({body!r})") from None
        if not isinstance(node, ast.List):
            raise InferError(f"tool_calls: the calls are not a Python list ({body!r})")
        open_, close = body[:i].strip(), body[j + 1:].strip()
        spec: dict[str, Any] = {
            "open_pattern": (r"\s*" + flex(open_)) if open_ else r"\s*" + self._ipython_tag(body) + r"(?=\[\s*[A-Za-z_][\w.\-]*\s*\()",
            "content": "python-call-list",
            "transform_each": True,
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
        }
        if close:
            spec["close_pattern"] = flex(close) + r"\s*"
        elif self.ends:
            spec["close_pattern"] = r"\s*" + _one_of(self.ends) + r"[\s\S]*"
        self.call_head = open_.split()[0] if open_ else ""
        self.say(f"tool_calls: a Python call list after {open_!r}")
        return spec, ""

    def _python_lines(self, body, two_body):
        """Python calls outside a list, one after another in a section (OLMo 3's
        ``<function_calls>\nget_weather(city='Paris', days=3)\n</function_calls>``): each call's
        keyword arguments read by ``xml-inline`` (a value in Python or JSON syntax)."""
        name = P.WEATHER["function"]["name"]
        n, m = body.find(name), body.rfind(")")
        open_, close = body[:n].strip(), body[m + 1:].strip()
        call = r"[A-Za-z_][\w.\-]*\("
        lines = self._lines_section(open_, close, two_body, r"\)", "(?=" + call + ")", r"(?P<name>[A-Za-z_][\w.\-]*)\(")
        try:
            node = ast.parse(body[n: m + 1], mode="eval").body
        except SyntaxError:
            node = None
        if lines is None or not isinstance(node, ast.Call):
            raise InferError(f"tool_calls: Python calls outside a list, and not one per line in one section ({body!r})")
        spec, self.call_head = lines
        spec.update({
            "content": "xml-inline",
            "content_args": {"tag_pattern": PY_KWARG, "value_parser": {"name": "json", "args": {"allow_non_json": True}}},
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        })
        self.say(f"tool_calls: Python calls one after another in one {open_!r} ... {close!r}")
        return spec, ""

    def _loose_json(self, body):
        """The arguments as JSON with bare keys and strings between other delimiters than quotes
        (Gemma 4's ``{city:<|"|>Paris<|"|>,days:3}``): ((start, end, None), content_args), or None."""
        name = P.WEATHER["function"]["name"]
        m = re.search(re.escape(name) + r"[^{]*?(\{)\s*city\s*:(.*?)Paris(.*?),\s*days\s*:\s*3\s*\}", body, re.S)
        if m is None:
            return None
        open_, close = m.group(2).strip(), m.group(3).strip()
        if not open_ or not close or '"' in (open_ + close) and (open_, close) == ('"', '"'):
            return None
        return (m.start(1), m.end(), None), {"unquoted_keys": True, "string_delims": [[open_, close]]}

    def _tagged(self, body, two_body):
        name = P.WEATHER["function"]["name"]
        n = body.find(name)
        if n < 0:
            raise InferError(f"tool_calls: the function name is not in the rendered call {body!r}")
        k1, v1 = body.find("city", n), body.find("Paris", n)
        k2 = body.find("days", v1)
        v2 = body.find("3", k2 + 4)
        if not (n < k1 < v1 < k2 < v2):
            raise InferError(f"tool_calls: tagged parameters not in key, value order ({body!r})")
        head = body[n + len(name): k1]
        kv = body[k1 + 4: v1]
        between = body[v1 + len("Paris"): k2]
        after = body[v2 + 1:]
        tag_open = _common_suffix(head, between)
        ws = re.search(r"\s", tag_open)
        lead = re.match(self.marker, tag_open)
        if lead and tag_open[lead.end():].startswith("<"):
            # a whole marker first (the previous value's tag's separator): the tag opens after it
            tag_open = tag_open[lead.end():]
        elif ws:
            tag_open = tag_open[ws.end():].lstrip()
        if not tag_open:
            raise InferError(f"tool_calls: no tag before each parameter ({body!r})")
        tag_close = between[: len(between) - len(tag_open)].strip()
        header = head[: len(head) - len(tag_open)].strip()
        if tag_close and not after.strip().startswith(tag_close):
            raise InferError(f"tool_calls: the last parameter does not close like the others ({body!r})")
        post = after.strip()[len(tag_close):].strip()
        pre = body[:n].strip()
        if not pre:
            raise InferError(f"tool_calls: a call with no marker before its name ({body!r})")
        kv_rx = flex(kv.strip()).replace("><", r">\s*<") if kv.strip() else ""  # tags a model may put on lines
        kv2 = body[k2 + 4: v2]
        if kv2.strip() and kv2.strip() != kv.strip():
            # the key's tag says the value's type (DeepSeek-V3.2's string="true" / "false"):
            # the two renders' differing middles as alternatives
            a, b = kv.strip(), kv2.strip()
            i = P.common_prefix(a, b)
            j = len(_common_suffix(a[i:], b[i:]))
            kv_rx = (flex(a[:i]) + "(?:" + lit(a[i: len(a) - j]) + "|" + lit(b[i: len(b) - j]) + ")" + flex(a[len(a) - j:])).replace("><", r">\s*<")
            self.say(f"tool_calls: the key's tag varies with the value: {a!r} / {b!r}")
        # a value in a tag named by its key (``<parameter=city>Paris</parameter>``) may sit on lines
        # of its own, as the template family that renders "<parameter=city>\nParis\n" writes it:
        # one newline either side is not the value's (a value tag of its own, GLM's
        # ``<arg_value>``, keeps every character)
        named = kv.strip() == ">" and bool(tag_close)
        nl_open = r"\n?" if (kv.endswith("\n") or named) else ""
        nl_close = r"\n?" if (between.startswith("\n") or named) else ""
        tag = lit(tag_open) + r"(?P<key>[^\s<>=\"']+)" + r"\s*" + kv_rx + nl_open + r"(?P<value>.*?)" + nl_close + (flex(tag_close) if tag_close else r"(?=\s*" + lit(tag_open) + r"|\Z)")
        end1 = v2 + 1 + (len(after) - len(after.lstrip())) + len(tag_close)
        pos2 = two_body.find(P.TIME["function"]["name"]) if two_body else -1
        outer, inner, post = self._split_two(body[:n], body[end1:], end1, pos2, two_body)
        header_rx = flex(header) if header else ""
        pos = two_body.find(P.TIME["function"]["name"]) if two_body else -1
        second = two_body[pos + len(P.TIME["function"]["name"]):].split(tag_open, 1)[0].strip() if pos >= 0 else ""
        if header and second != header and re.sub(r"\d+", "0", second) == re.sub(r"\d+", "0", header):
            # a number in it that differs from call to call (an index)
            header_rx = re.sub(r"\d+", r"\\d+", header_rx)
            self.say(f"tool_calls: the number in {header!r} counts the calls")
        if name in header:
            # the name written again after it (a recipient, then an invoke tag: ``to=get_weather
            # <|message|><invoke name="get_weather">``): the same name, not that one literally
            parts = header.split(name)
            header_rx = "".join(flex(part) + (_name_chars(parts[i + 1]) if i + 1 < len(parts) else "") for i, part in enumerate(parts))
            self.say(f"tool_calls: the name is written again in {header!r}")
        opening = r"\s*" + (r"(?:" + flex(outer) + r"\s*)?" if outer else "") + flex(inner) + _name_group(head) + header_rx
        self.call_head = (outer or inner).split()[0]
        self.say(f"tool_calls: tagged parameters {tag_open!r} KEY {kv!r} VALUE {tag_close!r} in {pre!r} NAME {header!r} ... {post!r}")
        spec = {
            "open_pattern": opening,
            "close_pattern": (flex(post) + r"\s*") if post else r"\s*(?=" + _one_of(self.ends or [r"\Z"]) + ")",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {"tag_pattern": tag},
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        }
        return spec, self._outer_close(two_body, post)


def _token_suffix(source: str) -> tuple[str, str, str] | None:
    """(variable, value, the source with it set to "") where the template formats one variable's
    value into its special tokens (Hy3's ``HYTK = ':opensource'`` in ``'<tool_call{}>'.format(HYTK)``
    and a score of others): a parameter of the template, which the family's models write with
    other values (Hy3-preview's tokens have none)."""
    for m in re.finditer(r"\{%-?\s*set\s+(\w+)\s*=\s*(['\"])([^'\"\s{}]+)\2\s*-?%\}", source):
        var, quote, value = m.group(1), m.group(2), m.group(3)
        uses = re.findall(r"['\"]<[^'\"]*\{\}[^'\"]*>['\"]\s*\.format\(\s*" + var + r"\s*\)", source)
        if len(uses) >= 4:
            bare = m.group(0).replace(quote + value + quote, quote * 2, 1)
            return var, value, source[: m.start()] + bare + source[m.end():]
    return None


def _optional_suffix(template: dict, suffix: str) -> dict:
    """``template`` with ``suffix`` optional wherever its patterns and anchors write it."""
    rx = lit(suffix)

    def fix(pattern: str) -> str:
        return pattern.replace(rx, "(?:" + rx + ")?")

    out = json.loads(json.dumps(template))
    if "start_anchor" in out:
        anchors = out.pop("start_anchor")
        out = {"start_anchor_pattern": _one_of([fix(lit(a)) for a in (anchors if isinstance(anchors, list) else [anchors])]), **out}
    elif "start_anchor_pattern" in out:
        out["start_anchor_pattern"] = fix(out["start_anchor_pattern"])
    for spec in out["fields"].values():
        for key in ("open_pattern", "close_pattern"):
            if key in spec:
                spec[key] = fix(spec[key])
        args = spec.get("content_args") or {}
        if "tag_pattern" in args:
            args["tag_pattern"] = fix(args["tag_pattern"])
    return out


# --- verification ----------------------------------------------------------------------------
def _reasoning_close_example(template: dict) -> str | None:
    spec = template["fields"].get("reasoning_content")
    if not spec:
        return None
    close = spec["close_pattern"].split("|(?=")[0]
    return re.sub(r"\\(.)", r"\1", close)


def _check(compiled, item: P.Rendered, template: dict) -> str | None:
    output, expected = item.output, item.expected
    variants = [(output, expected)]
    close = _reasoning_close_example(template)
    if "reasoning_content" not in expected and close:
        variants.append((P.REASONING + close + output, {"reasoning_content": P.REASONING, **expected}))
    why = None
    for text, want in variants:
        why = _parse_both(compiled, text, item.prefix, want)
        if why is None:
            return None
    return why


def _parse_both(compiled, text: str, prefix: str, want: dict) -> str | None:
    try:
        whole = compiled.parse(text, prefix=prefix, tools=P.TOOLS)
    except Exception as exc:  # noqa: BLE001
        return f"raises {type(exc).__name__}: {exc}"
    if not P.matches(whole, want):
        return f"got {P.normalize(whole)}, want {want}"
    for size in (1, 7):
        try:
            parser = compiled.parser(prefix=prefix, tools=P.TOOLS)
            for k in range(0, len(text), size):
                parser.feed(text[k: k + size])
            streamed, _ = parser.finalize()
        except Exception as exc:  # noqa: BLE001
            return f"streamed in {size}-character chunks: raises {type(exc).__name__}: {exc}"
        if P.normalize(streamed) != P.normalize(whole):
            return f"streamed in {size}-character chunks: got {P.normalize(streamed)}, whole {P.normalize(whole)}"
    return None


_PART = {
    "answer": "end of turn",
    "answer_no_tools": "end of turn",
    "multi_turn": "start anchor",
    "reasoning_answer": "reasoning",
}


def _part(probe_name: str) -> str:
    if "call" in probe_name:
        return "tool_calls"
    if "reasoning" in probe_name:
        return "reasoning"
    return _PART.get(probe_name, "content")


def verify(template: dict, chat: ChatTemplate, rendered: dict, *, random_count: int = 24, seed: int = 0) -> list[str]:
    """What fails when the chat template's probes and ``random_count`` seeded random
    conversations parse through ``template`` (whole and streamed); [] when all round-trip."""
    from ..api import compile_template

    compiled = compile_template(template)
    chat = _as_the_model_writes(chat, [])  # (where infer_report has not wrapped it already)
    failures = []
    items = list(rendered.values())
    rng = random.Random(seed)
    for index in range(random_count):
        result = P.render_probe(chat, P.random_probe(rng, index))
        if not isinstance(result, str):
            items.append(result)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for item in items:
            why = _check(compiled, item, template)
            if why and item.first_turn is not None and _check(compiled, item.first_turn, template) is None:
                why = None  # two assistant turns: the first parses
            if why:
                failures.append(f"{_part(item.probe.name)}: probe {item.probe.name} ({item.output[:120]!r}): {why}")
    return failures


def infer_report(chat_template, *, bos_token: str = "", eos_token: str = "", random_count: int = 24, seed: int = 0) -> InferResult:
    """``infer`` with what each probe showed (``lines``); ``template`` None and ``error`` set
    when no verified template could be inferred."""
    from ..compiler.lint import lint

    chat = chat_template if isinstance(chat_template, ChatTemplate) else ChatTemplate(chat_template, bos_token=bos_token, eos_token=eos_token)
    lines: list[str] = []
    if _PromptAlways.applies(chat):
        always = _PromptAlways(chat, lines)
        if always.tail(P.TOOLS, {}):
            chat = always
        else:
            lines.clear()  # add_generation_prompt adds nothing at all (Mistral's [/INST] ends the prompt)
    chat = _as_the_model_writes(chat, lines)
    engine = _Infer(chat)
    engine.lines[:0] = lines
    try:
        template = engine.infer()
    except InferError as exc:
        return InferResult(None, engine.lines, str(exc))
    from ..compiler.validate import TemplateError

    suffix = _token_suffix(chat.source)
    if suffix is not None:
        var, value, bare_source = suffix
        template = _optional_suffix(template, value)
        engine.say(f"markers: the template formats {var} = {value!r} into its special tokens; the suffix is optional (the tokens with {var} = '' are checked too)")
    try:
        failures = verify(template, chat, engine.rendered, random_count=random_count, seed=seed)
        if suffix is not None and not failures:
            bare = _as_the_model_writes(ChatTemplate(suffix[2], bos_token=chat.bos_token, eos_token=chat.eos_token), [])
            failures = verify(template, bare, _Infer(bare).rendered, random_count=random_count, seed=seed)
    except TemplateError as exc:
        return InferResult(None, engine.lines, f"verification: the inferred template does not compile: {exc}")
    if failures:
        engine.lines.extend(failures)
        return InferResult(None, engine.lines, f"{failures[0]} (and {len(failures) - 1} more)" if len(failures) > 1 else failures[0])
    for finding in lint(template):
        engine.say(f"lint: {finding}")
    engine.say(f"verified: {len(engine.rendered)} probes and {random_count} random conversations round-trip, whole and streamed")
    return InferResult(template, engine.lines)


def infer(chat_template, *, bos_token: str = "", eos_token: str = "") -> dict:
    """A response template for the chat template ``chat_template`` (its jinja text), verified to
    parse back what the chat template renders; raises ``InferError`` naming the part it could not
    infer (``infer_report`` gives every probe's render)."""
    result = infer_report(chat_template, bos_token=bos_token, eos_token=eos_token)
    if result.template is None:
        raise InferError(result.error)
    return result.template
