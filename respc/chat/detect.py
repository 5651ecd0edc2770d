"""Which bundled family's format a chat template writes (``respc.detect``).

The chat template renders probe conversations (``probes.base_probes``); each bundled template
whose start anchor occurs in the probes' prompts (a cheap pre-filter) parses every rendered
assistant turn with the render before it as prefix, and fits when each applicable probe gives
back the probe's message. Of several that fit, the one whose own samples' prompts the chat template
reproduces best wins (the family whose chat template this is), then the stricter template (longer
delimiters).
"""

from __future__ import annotations

import json
import warnings
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from . import probes as _probes
from .render import ChatTemplate


@dataclass
class DetectResult:
    """What detect found: ``family`` (None when none fits), the families that fit, for each
    candidate that did not the probes it failed, and the probes that did not apply."""

    family: str | None
    fitting: list = field(default_factory=list)
    failures: dict = field(default_factory=dict)
    skipped: dict = field(default_factory=dict)
    probes: list = field(default_factory=list)

    def explain(self) -> str:
        lines = []
        if self.family:
            lines.append(f"{self.family}" + (f" (also fit: {', '.join(f for f in self.fitting if f != self.family)})" if len(self.fitting) > 1 else ""))
            return "\n".join(lines)
        if not self.probes:
            lines.append("no probe could be rendered: " + "; ".join(f"{k}: {v}" for k, v in self.skipped.items()))
            return "\n".join(lines)
        lines.append(f"no bundled family fits ({len(self.probes)} probes rendered)")
        ranked = sorted(self.failures.items(), key=lambda kv: len(kv[1]))[:5]
        for family, failed in ranked:
            lines.append(f"  {family}: fails {', '.join(name for name, _ in failed)}")
        if not self.failures:
            lines.append("  no bundled template's start anchor occurs in the rendered prompts")
        return "\n".join(lines)


@lru_cache(maxsize=None)
def _families() -> tuple:
    """(name, compiled template, anchor test) of every bundled template."""
    from ..api import bundled_templates, load

    out = []
    for name in bundled_templates():
        compiled = load(name)
        template = compiled.template
        if "start_anchor_pattern" in template:
            rx = re.compile(template["start_anchor_pattern"])
            test = rx.search
        elif "start_anchor" in template:
            anchors = template["start_anchor"]
            anchors = [anchors] if isinstance(anchors, str) else list(anchors)
            test = lambda text, anchors=tuple(anchors): any(a in text for a in anchors)  # noqa: E731
        else:
            test = lambda text: True  # noqa: E731
        out.append((name, compiled, test))
    return tuple(out)


@lru_cache(maxsize=None)
def samples(name: str) -> dict | None:
    try:
        path = resources.files("respc.templates").joinpath("samples", f"{name}.json")
        return json.loads(path.read_text("utf-8"))
    except (FileNotFoundError, OSError, ValueError):
        return None


def _strictness(template: dict) -> int:
    total = 0
    for spec in template.get("fields", {}).values():
        for key in ("open", "close", "open_pattern", "close_pattern"):
            value = spec.get(key)
            if isinstance(value, list):
                value = "".join(value)
            if isinstance(value, str):
                total += len(re.sub(r"\\.|[\[\]()?*+|{}^$]", "", value))
    return total


def _shingles(text: str, size: int = 8) -> set:
    return {text[i: i + size] for i in range(max(0, len(text) - size + 1))}


def _prompt_likeness(chat: ChatTemplate, name: str) -> float:
    """How alike the chat template's prompt (with the family's sample tools) and the family's
    sample prompts are: the Jaccard index of their sets of 8-character pieces (last 3,000
    characters; linear time, where difflib's ratio is quadratic)."""
    data = samples(name)
    if not data or not data.get("cases"):
        return 0.0
    rendered = chat.render([_probes.USER], tools=data.get("tools") or _probes.TOOLS, add_generation_prompt=True) or ""
    best = 0.0
    for case in data["cases"][:2]:
        prefix = case.get("prefix", "")
        if prefix:
            a, b = _shingles(rendered[-3000:]), _shingles(prefix[-3000:])
            if a or b:
                best = max(best, len(a & b) / len(a | b))
    return best


def _shown_fields(template: dict, rendered: list) -> tuple[int, int]:
    """(fields shown, fields never shown) of the template's reasoning and calls. A field is shown
    where a probe's render has it back, or where the prompts write its open marker (a template
    that drops reasoning from its history and tells the model, in its system prompt, to think
    in ``[THINK]...[/THINK]``)."""
    shown = set()
    for item in rendered:
        shown.update(item.expected)
    prompts = "\n".join({item.prefix for item in rendered})
    fields = [key for key in template.get("fields", {}) if key in ("reasoning_content", "tool_calls")]
    for key in fields:
        spec = template["fields"][key]
        marker = spec.get("open") if isinstance(spec.get("open"), str) else next(iter(_literal_runs(spec.get("open_pattern") or "")), None)
        if key not in shown and marker and marker.strip() and marker.strip() in prompts:
            shown.add(key)
    used = sum(1 for key in fields if key in shown)
    return used, len(fields) - used


def _ids_given_back(compiled, rendered: list) -> int:
    """How many probes whose render shows call ids the template parses with those ids."""
    count = 0
    for item in rendered:
        want = [c.get("id") for c in item.expected.get("tool_calls") or []]
        if not any(want):
            continue
        try:
            got = _probes.normalize(compiled.parse(item.output, prefix=item.prefix, tools=_probes.TOOLS)).get("tool_calls") or []
        except Exception:  # noqa: BLE001
            continue
        count += [c.get("id") for c in got] == want
    return count


def render_all(chat: ChatTemplate, probe_list=None) -> tuple[list, dict]:
    rendered, skipped = [], {}
    for probe in probe_list if probe_list is not None else _probes.base_probes():
        result = _probes.render_probe(chat, probe)
        if isinstance(result, str):
            skipped[probe.name] = result
        else:
            rendered.append(result)
    return rendered, skipped


@lru_cache(maxsize=None)
def reasoning_close(name: str) -> str | None:
    """What the family writes between its reasoning and its answer, from its samples (to stand
    in for a reasoning close that a chat template pre-opens but never renders)."""
    data = samples(name) or {}
    for case in data.get("cases", []):
        want = case.get("expected", {})
        r, c, out = want.get("reasoning_content"), want.get("content"), case.get("output", "")
        if isinstance(r, str) and isinstance(c, str) and r and c and r in out and c in out:
            i, j = out.index(r) + len(r), out.rindex(c)
            if i < j:
                return out[i:j]
    return None


def _opens_reasoning(compiled, prefix: str) -> bool:
    try:
        events = compiled.parser(prefix=prefix).initial_events
    except Exception:  # noqa: BLE001
        return False
    depth = 0
    for event in events or ():
        if event.get("field") == "reasoning_content":
            depth += {"region_open": 1, "region_close": -1}.get(event.get("type"), 0)
    return depth > 0


def _renders_alike(chat, item, compiled) -> bool:
    """Whether the family's reading of a probe's render, rendered again by the chat template,
    gives the same text: the render cannot tell the two messages apart (gpt-oss's template writes
    a message's content as its analysis channel when it has calls), so the probe does not veto.
    The calls must be read as the probe wrote them."""
    try:
        got = _probes.normalize(compiled.parse(item.output, prefix=item.prefix, tools=_probes.TOOLS))
    except Exception:  # noqa: BLE001
        return False
    want = item.expected
    strip = lambda calls: [{"name": c.get("name"), "arguments": c.get("arguments")} for c in calls or []]  # noqa: E731
    if strip(got.get("tool_calls")) != strip(want.get("tool_calls")) or set(got) - {"content", "reasoning_content", "tool_calls"}:
        return False
    message = {"role": "assistant", "content": got.get("content", "")}
    if got.get("reasoning_content"):
        message["reasoning_content"] = got["reasoning_content"]
    if item.probe.message.get("tool_calls"):
        message["tool_calls"] = item.probe.message["tool_calls"]
    probe = _probes.Probe(item.probe.name, message, item.probe.history, item.probe.kwargs, item.probe.tools)
    again = _probes.render_probe(chat, probe)
    return not isinstance(again, str) and again.output == item.output and again.prefix == item.prefix


def parses_all(compiled, rendered: list, stop_at_first: bool = True, name: str | None = None, chat=None) -> list:
    """The probes (name, why) that ``compiled`` does not round-trip.

    Where the prompt leaves the family's reasoning open and the turn's render has no reasoning
    (a chat template that pre-opens reasoning and drops it from the history), the probe's
    reasoning and the family's own reasoning close (from its samples) stand in front of the
    rendered turn."""
    failed = []
    for item in rendered:
        why = _check(compiled, item, name)
        if why and item.first_turn is not None and not _check(compiled, item.first_turn, name):
            why = None  # the render holds two assistant turns: the family reads the first
        if why and chat is not None and _renders_alike(chat, item, compiled):
            why = None
        if why:
            failed.append((item.probe.name, why))
            if stop_at_first:
                break
    return failed


def _check(compiled, item, name: str | None) -> str | None:
    why = _round_trip(compiled, item.output, item.prefix, item.expected)
    if why and "reasoning_content" not in item.expected and name and _opens_reasoning(compiled, item.prefix):
        close = reasoning_close(name)
        if close is not None:
            expected = {"reasoning_content": _probes.REASONING, **item.expected}
            why = _round_trip(compiled, _probes.REASONING + close + item.output, item.prefix, expected)
    return why


def _round_trip(compiled, output: str, prefix: str, expected: dict) -> str | None:
    """None when ``compiled`` parses ``output`` to ``expected``, else what it gave."""
    try:
        parsed = compiled.parse(output, prefix=prefix, tools=_probes.TOOLS)
    except Exception as exc:  # noqa: BLE001  (a probe the template cannot parse fails the family)
        return f"{type(exc).__name__}: {exc}"
    if not _probes.matches(parsed, expected):
        return f"got {_probes.normalize(parsed)}, want {expected}"
    return None


def as_chat_template(chat_template, bos_token: str = "", eos_token: str = "") -> ChatTemplate:
    if isinstance(chat_template, ChatTemplate):
        return chat_template
    return ChatTemplate(chat_template, bos_token=bos_token, eos_token=eos_token)


def detect_report(chat_template, *, bos_token: str = "", eos_token: str = "", all_failures: bool = False) -> DetectResult:
    """Detect with the whole story (see DetectResult)."""
    chat = as_chat_template(chat_template, bos_token, eos_token)
    rendered, skipped = render_all(chat)
    result = DetectResult(None, skipped=skipped, probes=[r.probe.name for r in rendered])
    if not rendered:
        return result
    prompts = "\n".join(r.prefix[-400:] for r in rendered)
    for name, compiled, test in _families():
        if not test(prompts):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a prefix without the anchor is a failure to report, not to warn of
            failed = parses_all(compiled, rendered, stop_at_first=not all_failures, name=name, chat=chat)
        if failed:
            result.failures[name] = failed
        else:
            result.fitting.append(name)
    if not result.fitting:
        result.fitting = _own_template_fits(chat, rendered, result)
    if result.fitting:
        if len(result.fitting) == 1:
            result.family = result.fitting[0]
        else:
            by_name = {name: compiled for name, compiled, _ in _families()}
            likeness = {n: round(_prompt_likeness(chat, n), 3) for n in result.fitting}
            result.family = max(
                result.fitting,
                key=lambda n: (
                    likeness[n] >= 0.9,  # the family's own sample prompts, rendered by this very template
                    -_shown_fields(by_name[n].template, rendered)[1],
                    _shown_fields(by_name[n].template, rendered)[0],
                    _ids_given_back(by_name[n], rendered),
                    likeness[n],
                    _strictness(by_name[n].template),
                    n,
                ),
            )
    return result


def _literal_runs(pattern: str) -> list:
    """The literal pieces (four characters or more) of a regex, before any lookahead."""
    pattern = pattern.split("(?=")[0]
    runs, run, i = [], "", 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt.isalnum():
                runs.append(run)
                run = ""
            else:
                run += nxt
            i += 2
            continue
        if ch in "[](){}?*+|^$.":
            runs.append(run)
            run = ""
        else:
            run += ch
        i += 1
    runs.append(run)
    return [r for r in runs if len(r.strip()) >= 4]


def _call_marker(template: dict) -> str | None:
    spec = template.get("fields", {}).get("tool_calls") or {}
    value = spec.get("open")
    if isinstance(value, list):
        value = value[0] if value else None
    if isinstance(value, str) and len(value.strip()) >= 4:
        return value.strip()
    runs = _literal_runs(spec.get("open_pattern") or "")
    return runs[0].strip() if runs else None


def _own_template_fits(chat, rendered: list, result: DetectResult) -> list:
    """Where no family fits every probe: a family whose own sample prompts this chat template
    reproduces (likeness >= 0.9), whose every probe without calls passes, and whose call probes
    fail with the family's call marker in each render (the template writes the family's calls
    with another body than the model's: llama.cpp's LFM2 template renders JSON inside
    ``<|tool_call_start|>``, the model writes Python calls). Such a probe is excused, as
    ``excused`` in the failures."""
    by_name = {name: compiled for name, compiled, _ in _families()}
    outputs = {item.probe.name: item for item in rendered}
    found = []
    for name, failed in result.failures.items():
        marker = _call_marker(by_name[name].template)
        if not marker:
            continue
        if any("tool_calls" not in outputs[p].expected or marker not in outputs[p].output for p, _ in failed):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            every = parses_all(by_name[name], rendered, stop_at_first=False, name=name, chat=chat)
        if any("tool_calls" not in outputs[p].expected or marker not in outputs[p].output for p, _ in every):
            continue
        if len(every) == len(rendered) or _prompt_likeness(chat, name) < 0.9:
            continue
        found.append(name)
        result.failures[name] = [(p, "excused: " + why) for p, why in every]
    return found


def detect(chat_template, *, bos_token: str = "", eos_token: str = "") -> str | None:
    """The bundled family whose format ``chat_template`` (its jinja text) writes, or None.

    A family fits when it parses every probe conversation the chat template renders back to the
    probe's message; ``detect_report`` says which probes failed where none fits."""
    return detect_report(chat_template, bos_token=bos_token, eos_token=eos_token).family
