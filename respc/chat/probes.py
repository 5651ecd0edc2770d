"""Probe conversations, their renders, and the comparison of a parsed message with a probe's.

A probe is a conversation history and the assistant message that follows it, rendered with some
template kwargs. Its *prompt* is the history rendered with the generation prompt; its *turn* is
the history plus the message rendered without it. Where the turn starts with the prompt, what
follows is the text the model writes (``output``); where it does not (a prompt that pre-opens a
block the turn's render leaves out), the two are cut at their common prefix. What the render
shows of the message (a template may drop reasoning from the history, or not render tool calls)
is what the probe expects back (``expected``).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the weather forecast for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city name"},
                    "days": {"type": "integer", "description": "Number of days to forecast"},
                },
                "required": ["city", "days"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Get the current local time in a timezone.",
            "parameters": {
                "type": "object",
                "properties": {"timezone": {"type": "string", "description": "IANA timezone name"}},
                "required": ["timezone"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "set_alarm",
            "description": "Set an alarm.",
            "parameters": {
                "type": "object",
                "properties": {
                    "hour": {"type": "integer", "description": "Hour of the day"},
                    "label": {"type": "string", "description": "What the alarm is for"},
                },
                "required": ["hour", "label"],
            },
        },
    },
]

USER = {"role": "user", "content": "What's the weather in Paris for the next 3 days?"}
# ids of nine letters and digits: Mistral's templates refuse any other
ID1, ID2 = "Ab3dE5gH1", "Zx9yW8vU7"


def call(name: str, arguments: dict, call_id: str | None = None) -> dict:
    item = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if call_id is not None:
        item["id"] = call_id
    return item


WEATHER = call("get_weather", {"city": "Paris", "days": 3}, ID1)
TIME = call("get_time", {"timezone": "Asia/Tokyo"}, ID2)
TOOL_RESULT = "sunny, cloudy, rain"
REASONING = "The user wants a forecast for Paris. I should call get_weather."
ANSWER = "The capital of France is Paris."


@dataclass
class Probe:
    name: str
    message: dict
    history: list = field(default_factory=lambda: [USER])
    kwargs: dict = field(default_factory=dict)
    tools: bool = True


def base_probes() -> list[Probe]:
    """The probes detect runs: each kind of reply, thinking on and off, and a multi-turn history."""
    tool_turn = [
        USER,
        {"role": "assistant", "content": "", "tool_calls": [WEATHER]},
        {"role": "tool", "tool_call_id": ID1, "name": "get_weather", "content": TOOL_RESULT},
    ]
    probes = [
        Probe("answer", {"role": "assistant", "content": ANSWER}),
        Probe("reasoning_answer", {"role": "assistant", "reasoning_content": REASONING, "content": ANSWER}),
        Probe("call", {"role": "assistant", "content": "", "tool_calls": [WEATHER]}),
        Probe("content_call", {"role": "assistant", "content": "Let me check.", "tool_calls": [WEATHER]}),
        Probe("reasoning_call", {"role": "assistant", "reasoning_content": REASONING, "content": "", "tool_calls": [WEATHER]}),
        Probe("two_calls", {"role": "assistant", "content": "", "tool_calls": [WEATHER, TIME]}),
        Probe("multi_turn", {"role": "assistant", "content": "It will be sunny, then cloudy, then rain."}, history=tool_turn),
        Probe("answer_no_tools", {"role": "assistant", "content": ANSWER}, tools=False),
    ]
    for flag in (True, False):
        tag = "on" if flag else "off"
        probes.append(Probe(f"thinking_{tag}_answer", {"role": "assistant", "content": ANSWER}, kwargs={"enable_thinking": flag}))
        probes.append(
            Probe(
                f"thinking_{tag}_reasoning",
                {"role": "assistant", "reasoning_content": REASONING, "content": ANSWER},
                kwargs={"enable_thinking": flag},
            )
        )
        probes.append(
            Probe(f"thinking_{tag}_call", {"role": "assistant", "content": "", "tool_calls": [WEATHER]}, kwargs={"enable_thinking": flag})
        )
    return probes


_WORDS = "alpha beta gamma delta forecast city river mountain blue green quick answer value note".split()
_CITIES = ["Paris", "Tokyo", "New York", "São Paulo", "Zürich", "Lagos", "Oslo"]


def random_probe(rng: random.Random, index: int) -> Probe:
    """A random conversation: reasoning or not, content or not, zero to three calls with other values."""

    def text() -> str:
        return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 8))).capitalize() + rng.choice([".", "!", "?", ""])

    calls = []
    for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
        kind = rng.randrange(3)
        if kind == 0:
            calls.append(call("get_weather", {"city": rng.choice(_CITIES), "days": rng.randint(1, 14)}))
        elif kind == 1:
            calls.append(call("get_time", {"timezone": rng.choice(["Europe/Paris", "Asia/Tokyo", "UTC"])}))
        else:
            calls.append(call("set_alarm", {"hour": rng.randint(0, 23), "label": text()}))
    for n, item in enumerate(calls):
        item["id"] = "".join(rng.choice("abcdefghijKLMNOP0123456789") for _ in range(9)) if n % 2 == 0 else (ID1 if n == 1 else ID2)
    message: dict[str, Any] = {"role": "assistant", "content": text() if (not calls or rng.random() < 0.4) else ""}
    if rng.random() < 0.5:
        message["reasoning_content"] = text()
    if calls:
        message["tool_calls"] = calls
    kwargs = {}
    if rng.random() < 0.3:
        kwargs["enable_thinking"] = rng.random() < 0.5
    return Probe(f"random_{index}", message, kwargs=kwargs)


@dataclass
class Rendered:
    """A probe rendered: the prompt the model is given, the text it writes, what parsing must give."""

    probe: Probe
    prefix: str
    output: str
    expected: dict
    note: str = ""
    first_turn: "Rendered | None" = None  # the first of two assistant turns the render holds
    turn_header: str = ""  # (a first turn's) the generation prompt's start that begins the second


def render_probe(chat, probe: Probe) -> Rendered | str:
    """The probe rendered with ``chat`` (a ChatTemplate), or a str saying why it does not apply."""
    tools = TOOLS if probe.tools else None
    if probe.kwargs and "enable_thinking" in probe.kwargs and "enable_thinking" not in chat.source:
        return "the template does not read enable_thinking"
    prompt = chat.render(probe.history, tools=tools, add_generation_prompt=True, **probe.kwargs)
    if prompt is None:
        return f"the prompt raises: {chat.last_error}"
    turn = chat.render(probe.history + [probe.message], tools=tools, add_generation_prompt=False, **probe.kwargs)
    if turn is None:
        return f"the turn raises: {chat.last_error}"
    note = ""
    if turn.startswith(prompt):
        prefix, output = prompt, turn[len(prompt):]
    else:
        cut = common_prefix(prompt, turn)
        while cut > 0 and not (prompt[cut - 1].isspace() or prompt[cut - 1] in ">]}"):
            cut -= 1  # cut where a token ends, not inside one ("<think>" against "<tool_call>")
        tail = prompt[cut:]
        rest = turn[cut:]
        if cut == 0:
            return "the turn's render does not continue the prompt"
        if len(tail) <= 40:
            # the prompt writes a short piece the turn's render has not: a block it pre-opens
            # (the turn shows the close) or pre-closes (thinking off: a reply with reasoning
            # does not follow such a prompt)
            closing = tail.strip().replace("<", "</", 1) if tail.strip().startswith("<") else None
            if tail.strip() and tail.strip() in rest and not (closing and closing in rest):
                return f"the prompt's {tail!r} is not how the turn's render goes on (a reply this prompt does not ask for)"
            prefix, output = prompt, rest
            note = f"the prompt ends with {tail!r}, which the turn's render has not"
            overlap = _shared_close(tail, rest)
            if overlap:
                # the prompt's piece ends with the close the turn's render begins with (an empty
                # block pre-closed in the prompt, ``</think>`` again in the history): the model
                # writes what follows that close
                output = rest[len(overlap):]
                note += f"; both write {overlap!r}, the output is read after it"
        else:
            # the prompt puts text after the last turn (instructions) before its generation
            # header: the turn is read after the first place that header occurs in it
            header = ""
            for size in range(min(80, len(prompt)), 5, -1):
                if prompt[-size:] in rest:
                    header = prompt[-size:]
                    break
            if not header:
                return "the turn's render does not continue the prompt"
            prefix, output = prompt, rest[rest.index(header) + len(header):]
            note = f"read after the generation header {header!r}"
    first = None
    header = two_turns(chat, probe, prompt, output)
    if header:
        # the render may split the message into two assistant turns (or the format writes
        # several messages in one reply, as gpt-oss's channels): the first turn alone, and what
        # it shows of the message, is the reading to try when the whole fails
        cut_output = output[: output.index(header, len(output) - len(output.lstrip()) + 1)]
        shown = dict(probe.message)
        if not all(c["function"]["name"] in cut_output for c in shown.get("tool_calls") or []):
            shown.pop("tool_calls")  # the calls are in the second turn
        cut_expected = expected_message(shown, cut_output, prefix)
        if cut_expected is not None:
            first = Rendered(probe, prefix, cut_output, cut_expected, f"{note}; the first of two assistant turns (up to {header!r})".lstrip("; "), turn_header=header)
    expected = expected_message(probe.message, output, prefix)
    if expected is None:
        return first or "the render shows nothing of the message"
    return Rendered(probe, prefix, output, expected, note, first)


def _shared_close(tail: str, rest: str) -> str:
    """The longest end of ``tail`` that starts with a tag and that ``rest`` begins with."""
    for start in range(len(tail)):
        if tail[start] == "<" and rest.startswith(tail[start:]):
            return tail[start:]
    return ""


def two_turns(chat, probe: Probe, prompt: str, output: str) -> str:
    """The start of the generation prompt (six characters or more, ending where a token ends)
    that the text the model writes holds past its first character: a render of two assistant
    turns. Empty when there is none."""
    tools = TOOLS if probe.tools else None
    bare = chat.render(probe.history, tools=tools, add_generation_prompt=False, **probe.kwargs)
    if bare is None or not prompt.startswith(bare):
        return ""
    added, inside = prompt[len(bare):], output.lstrip()[1:]
    for end in range(len(added), 5, -1):
        if added[end - 1] in ">]\n" and added[:end].strip() and added[:end] in inside:
            return added[:end]
    return ""


def common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    lo = 0
    while lo < n and a[lo] == b[lo]:
        lo += 1
    return lo


def expected_message(message: dict, output: str, prefix: str = "") -> dict | None:
    """What of ``message`` the rendered ``output`` shows, normalized (see ``normalize``)."""
    want: dict[str, Any] = {}
    reasoning = message.get("reasoning_content")
    if reasoning and reasoning in output:
        want["reasoning_content"] = reasoning
    content = message.get("content")
    if content and content in output:
        want["content"] = content
    calls = message.get("tool_calls") or []
    names = [c["function"]["name"] for c in calls]
    if calls and all(output.count(n) >= names.count(n) for n in names):  # (a name twice: rendered twice)
        want["tool_calls"] = [
            {"name": c["function"]["name"], "arguments": c["function"]["arguments"], **({"id": c["id"]} if c.get("id") and c["id"] in output else {})}
            for c in calls
        ]
    elif calls:
        return None  # the template does not render these calls: nothing to check
    if not want and (reasoning or content):
        return None
    return want


def normalize(message: dict) -> dict:
    """A parsed message in the probes' form: reasoning and content stripped (empty ones left out),
    calls as ``{name, arguments[, id]}`` with JSON-string arguments decoded."""
    out: dict[str, Any] = {}
    for key in ("reasoning_content", "content"):
        value = message.get(key)
        if isinstance(value, list):
            value = "".join(v for v in value if isinstance(v, str))
        if isinstance(value, str) and value.strip():
            out[key] = value.strip()
        elif value not in (None, ""):
            out[key] = value
    calls = []
    for item in message.get("tool_calls") or []:
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(function, dict):
            calls.append({"raw": item})
            continue
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                pass
        entry = {"name": function.get("name"), "arguments": arguments}
        if item.get("id") is not None:
            entry["id"] = item["id"]
        calls.append(entry)
    if calls:
        out["tool_calls"] = calls
    return out


def matches(parsed: dict, expected: dict) -> bool:
    """Whether the parsed message (normalized) is the expected one; a parsed id counts only where
    the probe's id was rendered."""
    got = normalize(parsed)
    want = expected
    if set(got) != set(want):
        return False
    for key in ("reasoning_content", "content"):
        if key in want and got[key] != want[key].strip():
            return False
    if "tool_calls" in want:
        if len(got["tool_calls"]) != len(want["tool_calls"]):
            return False
        for g, w in zip(got["tool_calls"], want["tool_calls"]):
            if g.get("name") != w["name"] or g.get("arguments") != w["arguments"]:
                return False
            if "id" in w and "id" in g and g["id"] != w["id"]:
                return False
    return True
