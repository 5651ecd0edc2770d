"""Which bundled family's format a chat template writes (``respc.detect``).

The chat template renders probe conversations (``probes.base_probes``); each bundled template
whose start anchor occurs in the probes' prompts (a cheap pre-filter) parses every rendered
assistant turn with the render before it as prefix, and fits when each applicable probe gives
back the probe's message. Of several that fit, the one whose own samples' prompts the chat template
reproduces best wins (the family whose chat template this is), then the stricter template (longer
delimiters).
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import json
import re
import warnings
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
    content_only: bool = False  # several fit, and the template shows no reasoning or calls

    def explain(self) -> str:
        lines = []
        if self.content_only:
            lines.append(
                f"{len(self.fitting)} bundled families fit ({', '.join(self.fitting)}), but the chat template renders "
                "neither reasoning nor tool calls and none's own prompt, so nothing tells their formats apart; "
                "`respc infer` writes a content-only template for it"
            )
            return "\n".join(lines)
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
    """(name, template dict, anchor test) of every bundled template: the JSON only, read in a
    few milliseconds; a family's parser is loaded (``_compiled``, ~25 ms each in the pure-Python
    runtime) only once its anchor occurs in a chat template's prompts."""
    from ..api import bundled_templates

    folder = resources.files("respc.templates")
    out = []
    for name in bundled_templates():
        template = json.loads(folder.joinpath(f"{name}.json").read_text("utf-8"))
        if "start_anchor_pattern" in template:
            rx = re.compile(template["start_anchor_pattern"])
            test = rx.search
        elif "start_anchor" in template:
            anchors = template["start_anchor"]
            anchors = [anchors] if isinstance(anchors, str) else list(anchors)
            test = lambda text, anchors=tuple(anchors): any(a in text for a in anchors)  # noqa: E731
        else:
            test = lambda text: True  # noqa: E731
        out.append((name, template, test))
    return tuple(out)


@lru_cache(maxsize=None)
def _compiled(name: str):
    """The bundled family's CompiledTemplate (``respc.load``), loaded on first use."""
    from ..api import load

    return load(name)


def _template(name: str) -> dict:
    return next(template for family, template, _ in _families() if family == name)


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


@lru_cache(maxsize=64)
def _frozen_shingles(text: str) -> frozenset:
    """``_shingles`` of a rendered prompt, shared by the families whose sample tools are the same."""
    return frozenset(_shingles(text))


@lru_cache(maxsize=256)
def _prompt_likeness(chat: ChatTemplate, name: str) -> float:
    """How alike the chat template's prompt (with the family's sample tools) and the family's
    sample prompts are: the Jaccard index of their sets of 8-character pieces (last 3,000
    characters; linear time, where difflib's ratio is quadratic). Cached per ChatTemplate (one per
    chat template and tokens: ``as_chat_template``) and family."""
    tails = _sample_tails(name)
    if tails is None:
        return 0.0
    tools, sets = tails
    tail = _frozen_shingles((chat.render([_probes.USER], tools=tools, add_generation_prompt=True) or "")[-3000:])
    return max((len(tail & b) / len(tail | b) for b in sets if tail or b), default=0.0)


@lru_cache(maxsize=256)
def _prompt_resemblance(chat: ChatTemplate, name: str) -> tuple[float, float]:
    """(likeness, containment): the Jaccard index above, and the share of the family's sample
    prompt's pieces that the chat template's prompt holds, leaving out the pieces of the sample
    tools' names and descriptions and of the user's message (what is left is the family's own
    template text: its markers, its system prompt, its way of writing the tools)."""
    pieces = _sample_pieces(name)
    if pieces is None:
        return 0.0, 0.0
    tools, owns = pieces
    whole = _frozen_shingles(chat.render([_probes.USER], tools=tools, add_generation_prompt=True) or "")
    containment = max((len(own & whole) / len(own) for own in owns if own), default=0.0)
    return _prompt_likeness(chat, name), containment


@lru_cache(maxsize=None)
def _sample_prompts(name: str):
    """(sample tools, up to two sample prompts) of the family: its sample prompts written with
    its sample tools (what the chat template renders here: a bare ``user``/``assistant`` sample
    prompt is every ChatML template's), or None without samples."""
    data = samples(name)
    if not data or not data.get("cases"):
        return None
    tools = data.get("tools") or _probes.TOOLS
    names = [t.get("function", t).get("name") for t in tools if isinstance(t, dict)]
    with_tools = [c for c in data["cases"] if names and isinstance(names[0], str) and names[0] in c.get("prefix", "")]
    return tools, [c["prefix"] for c in with_tools[:2] or data["cases"][:2] if c.get("prefix")]


@lru_cache(maxsize=None)
def _sample_tails(name: str):
    """(sample tools, [pieces of each sample prompt's last 3,000 characters]), or None."""
    prompts = _sample_prompts(name)
    return None if prompts is None else (prompts[0], [_shingles(prefix[-3000:]) for prefix in prompts[1]])


@lru_cache(maxsize=None)
def _sample_pieces(name: str):
    """(sample tools, [each sample prompt's pieces less those of the tools' names and descriptions
    and of the user's message]), or None."""
    prompts = _sample_prompts(name)
    if prompts is None:
        return None
    tools, prefixes = prompts
    noise = _shingles(_probes.USER["content"])
    for tool in tools:
        function = tool.get("function", tool) if isinstance(tool, dict) else {}
        properties = (function.get("parameters") or {}).get("properties") or {}
        for text in [function.get("name"), function.get("description")] + [p.get("description") for p in properties.values() if isinstance(p, dict)]:
            if isinstance(text, str):
                noise |= _shingles(text)
    return tools, [_shingles(prefix) - noise for prefix in prefixes]


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
        marker = _field_marker(template, key)
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
    """Whether the prompt leaves the family's reasoning open: a region open in the parser's events
    once one plain character follows the prefix (an open pattern, ``\\s*<think>``, is only
    matched when text after it shows it complete)."""
    try:
        parser = compiled.parser(prefix=prefix)
        events = list(parser.initial_events or ()) + list(parser.feed("x") or ())
    except Exception:  # noqa: BLE001
        return False
    depth = 0
    for event in events:
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
    source = chat.source if chat is not None else ""
    for item in rendered:
        why = _check(compiled, item, name, source)
        if why and item.first_turn is not None and not _check(compiled, item.first_turn, name, source):
            why = None  # the render holds two assistant turns: the family reads the first
        if why and chat is not None and _renders_alike(chat, item, compiled):
            why = None
        if why and chat is not None and chat.eos_token and item.output.rstrip().endswith(chat.eos_token):
            # the template ends the reply with the model's eos token, which stops the generation
            # (an engine strips it): the family reads the turn up to it
            cut = item.output.rstrip()[: -len(chat.eos_token)]
            if not _check(compiled, dataclasses.replace(item, output=cut), name, source):
                why = None
        if why:
            failed.append((item.probe.name, why))
            if stop_at_first:
                break
    return failed


def _check(compiled, item, name: str | None, source: str = "") -> str | None:
    why = _round_trip(compiled, item.output, item.prefix, item.expected, source)
    if why and "reasoning_content" not in item.expected and name and _opens_reasoning(compiled, item.prefix):
        close = reasoning_close(name)
        if close is not None:
            expected = {"reasoning_content": _probes.REASONING, **item.expected}
            why = _round_trip(compiled, _probes.REASONING + close + item.output, item.prefix, expected, source)
    return why


def _round_trip(compiled, output: str, prefix: str, expected: dict, source: str = "") -> str | None:
    """None when ``compiled`` parses ``output`` to ``expected`` (up to what the chat template's
    ``source`` itself writes: ``_without_render_artefacts``), else what it gave."""
    try:
        parsed = compiled.parse(output, prefix=prefix, tools=_probes.TOOLS)
    except Exception as exc:  # noqa: BLE001  (a probe the template cannot parse fails the family)
        return f"{type(exc).__name__}: {exc}"
    if _probes.matches(parsed, expected):
        return None
    got = _probes.normalize(parsed)
    if source and _probes.matches(_as_parsed(_without_render_artefacts(got, expected, source)), expected):
        return None
    return f"got {got}, want {expected}"


def _without_render_artefacts(got: dict, want: dict, source: str) -> dict:
    """The family's reading with what the chat template, not the model, wrote taken back out:
    a plain text (no marker characters) the template's source writes literally in front of the
    content (``'助手：' + content``), and call arguments it wrote with jinja's ``|string`` (a Python
    dict's repr, ``{'city': 'Paris'}``, where the model writes JSON)."""
    out = dict(got)
    for key in ("content", "reasoning_content"):
        have, need = out.get(key), want.get(key)
        if not (isinstance(have, str) and isinstance(need, str)) or not have.endswith(need):
            continue
        extra = have[: len(have) - len(need)].strip()
        if extra and extra in source and not any(ch in extra for ch in "<>[]{}|"):
            out[key] = need  # plain text, not a marker: a marker the family leaves in content is a misfit
    calls = []
    for call in out.get("tool_calls") or []:
        arguments = call.get("arguments")
        if isinstance(arguments, str):
            try:
                value = ast.literal_eval(arguments)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                value = None
            if isinstance(value, dict):
                call = {**call, "arguments": value}
        calls.append(call)
    if calls:
        out["tool_calls"] = calls
    return out


def _as_parsed(message: dict) -> dict:
    """A normalized message back in the parser's shape (for ``probes.matches``)."""
    out = {k: v for k, v in message.items() if k != "tool_calls"}
    if message.get("tool_calls"):
        out["tool_calls"] = [
            {"function": {"name": c.get("name"), "arguments": c.get("arguments")}, **({"id": c["id"]} if "id" in c else {})}
            for c in message["tool_calls"]
        ]
    return out


def as_chat_template(chat_template, bos_token: str = "", eos_token: str = "") -> ChatTemplate:
    if isinstance(chat_template, ChatTemplate):
        return chat_template
    if not isinstance(chat_template, str) or not isinstance(bos_token, str) or not isinstance(eos_token, str):
        return ChatTemplate(chat_template, bos_token=bos_token, eos_token=eos_token)  # (says what is wrong)
    return _chat_template(chat_template, bos_token, eos_token)


@lru_cache(maxsize=16)
def _chat_template(source: str, bos_token: str, eos_token: str) -> ChatTemplate:
    """One ChatTemplate per chat template and tokens in a process, with its renders: the probes
    render alike every time (one ``strftime_now`` instant per process), so a second detect of
    the same template renders nothing again."""
    return ChatTemplate(source, bos_token=bos_token, eos_token=eos_token)


def detect_report(chat_template, *, bos_token: str = "", eos_token: str = "", all_failures: bool = False) -> DetectResult:
    """Detect with the whole story (see DetectResult). A chat template (with its tokens) seen
    before in this process gets a copy of the first report: its renders, and so what fits, are
    the same every time (``_chat_template``)."""
    return copy.deepcopy(_detect_report(as_chat_template(chat_template, bos_token, eos_token), all_failures))


@lru_cache(maxsize=64)
def _detect_report(chat: ChatTemplate, all_failures: bool) -> DetectResult:
    rendered, skipped = render_all(chat)
    result = DetectResult(None, skipped=skipped, probes=[r.probe.name for r in rendered])
    if not rendered:
        return result
    prompts = "\n".join(r.prefix[-400:] for r in rendered)
    call_texts = [r.prefix[-200:] + r.output for r in rendered if r.expected.get("tool_calls")]
    for name, template, test in _families():
        if not test(prompts) or not _may_read_calls(template, call_texts):
            continue
        if call_texts and not _opens_a_call(template, call_texts) and _prompt_likeness(chat, name) < 0.9:
            # it reads none of the rendered calls and could only be excused by its own prompt
            # (``_own_template_fits``), which the chat template does not reproduce: no parser needed
            first_call = next(r.probe.name for r in rendered if r.expected.get("tool_calls"))
            result.failures[name] = [(first_call, _NO_CALL_OPEN)]
            continue
        compiled = _compiled(name)
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
        elif _content_only(chat, rendered, result.fitting):
            result.content_only = True  # nothing the template shows tells the fitting formats apart
        else:
            result.family = _winner(chat, rendered, result.fitting)
    return result


def _winner(chat, rendered: list, fitting: list) -> str:
    """The fitting family the tie-break picks: the greatest by each criterion in turn (the family's
    own sample prompts, rendered by this very template; no field the template never shows; more
    fields shown; more call ids given back; containment; likeness; longer delimiters; the name),
    each computed only for the families still tied (the containment's pieces of a whole sample
    prompt, and the ids' parses, are the costly ones)."""
    likeness = lambda n: round(_prompt_likeness(chat, n), 3)  # noqa: E731
    criteria = (
        lambda n: likeness(n) >= 0.9,
        lambda n: -_shown_fields(_template(n), rendered)[1],
        lambda n: _shown_fields(_template(n), rendered)[0],
        lambda n: _ids_given_back(_compiled(n), rendered),
        lambda n: round(_prompt_resemblance(chat, n)[1], 3),
        likeness,
        lambda n: _strictness(_template(n)),
        lambda n: n,
    )
    left = list(fitting)
    for key in criteria:
        if len(left) == 1:
            break
        values = {n: key(n) for n in left}
        best = max(values.values())
        left = [n for n in left if values[n] == best]
    return left[0]


def _content_only(chat, rendered: list, fitting: list) -> bool:
    """Whether several families fit and the chat template shows none of their reasoning or call
    fields (no probe gives one back, no prompt writes one's open marker) and reproduces none's
    own sample prompts: a template that renders content only (plain ChatML) says nothing of
    how the model writes reasoning or calls, and naming one of the fitting formats would be a
    guess (a parser that reads ``<tool_call>`` or ``<think>`` out of text the model may not
    mean so)."""
    if any(_shown_fields(_template(n), rendered)[0] for n in fitting):
        return False
    return all(_prompt_likeness(chat, n) < 0.9 for n in fitting)


@lru_cache(maxsize=1024)
def _literal_runs(pattern: str) -> tuple:
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
    return tuple(r for r in runs if len(r.strip()) >= 4)


def _structural_literals(template: dict) -> set:
    """The literals every turn of the family holds whatever it writes: its start anchors and its
    content close (``<|im_end|>``, ``<|im_start|>assistant``)."""
    out = set()
    anchors = template.get("start_anchor")
    for anchor in [anchors] if isinstance(anchors, str) else list(anchors or []):
        out.add(anchor.strip())
    out.update(run.strip() for run in _literal_runs(template.get("start_anchor_pattern") or ""))
    content = template.get("fields", {}).get("content") or {}
    for key in ("close", "close_pattern"):
        value = content.get(key)
        if isinstance(value, str):
            out.add(value.strip()) if key == "close" else out.update(run.strip() for run in _literal_runs(value))
    return {item for item in out if item}


def _field_marker(template: dict, key: str) -> str | None:
    """The first literal (four characters or more) of a field's open that is not one of the
    family's structural literals: what the text holds only where the model writes that field
    (hyperclovax's calls open with an optional ``<|im_end|><|im_start|>assistant`` before
    ``-> tool/function_call``; only the last says a call is there)."""
    spec = template.get("fields", {}).get(key) or {}
    structural = _structural_literals(template)
    value = spec.get("open")
    candidates = value if isinstance(value, list) else [value] if isinstance(value, str) else []
    candidates = [c.strip() for c in candidates if isinstance(c, str) and len(c.strip()) >= 4]
    candidates += [run.strip() for run in _literal_runs(spec.get("open_pattern") or "")]
    for candidate in candidates:
        if candidate not in structural:
            return candidate
    return None


def _call_marker(template: dict) -> str | None:
    return _field_marker(template, "tool_calls")


def _writes_calls(template: dict, output: str, unknown: bool = False) -> bool:
    """Whether ``output`` holds the start of the family's calls: the first literal of its
    ``tool_calls`` open (``<|tool_call_start|>``), or its open pattern anywhere in the text (a
    Python call list, whose open has no literal of its own or an optional one)."""
    marker = _call_marker(template)
    if marker and marker in output:
        return True
    pattern = (template.get("fields", {}).get("tool_calls") or {}).get("open_pattern")
    if not pattern:
        return False
    try:
        return re.search(pattern.replace("\\A", ""), output) is not None
    except re.error:
        # a pattern Python's re does not take as written (a variable-width lookbehind, a group
        # name used twice: the compiler rewrites those): no telling
        return unknown


def _may_read_calls(template: dict, call_texts: list) -> bool:
    """A cheap pre-filter next to the anchor's: where the chat template renders calls, a family
    can give them back (or have them excused) only if its call open, literal or pattern, occurs
    in one of those renders (with the prompt's end before it)."""
    if not call_texts:
        return True
    return any(_writes_calls(template, text, unknown=True) for text in call_texts)


_NO_CALL_OPEN = "its tool_calls open pattern matches in none of the rendered calls"


@lru_cache(maxsize=256)
def _open_regex(pattern: str):
    """The compiled call open of a family as its parser compiles it (``regex``, DOTALL), searched
    anywhere (``\\A`` dropped: the prompt's end stands before the output); None where it does
    not compile here."""
    pattern = pattern.replace("\\A", "")
    try:
        import regex

        return regex.compile(pattern, regex.DOTALL)
    except ImportError:
        pass
    except Exception:  # noqa: BLE001  (regex's own error class)
        return None
    try:
        return re.compile(pattern, re.DOTALL)
    except re.error:
        return None


def _opens_a_call(template: dict, call_texts: list) -> bool:
    """Whether the family may read one of the rendered calls: its whole ``tool_calls`` open (its
    pattern, not only its first literal) matches there, followed by a body of its kind (JSON
    opens with ``{`` or ``[``; tagged parameters hold a match of its tag pattern). A family reads
    no call whose open it does not match (True where a pattern does not compile here: no
    telling)."""
    spec = template.get("fields", {}).get("tool_calls") or {}
    pattern = spec.get("open_pattern")
    if not pattern:
        return True  # a literal open: ``_may_read_calls`` tested it
    rx = _open_regex(pattern)
    if rx is None:
        return True
    kind = spec.get("content")
    tags = _open_regex((spec.get("content_args") or {}).get("tag_pattern") or "") if kind == "xml-inline" else None
    for text in call_texts:
        for match in rx.finditer(text):
            body = text[match.end():].lstrip()
            if kind == "json" and body[:1] not in ("{", "["):
                continue
            if kind == "xml-inline" and tags is not None and tags.pattern and not tags.search(body):
                continue
            return True
    return False


def _only_calls_differ(compiled, item) -> bool:
    """Whether a call probe fails in its calls alone: the parse raises (on the call body), or
    gives the probe's reasoning and a content that holds the probe's (the calls the family does
    not read stay in its content)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = _probes.normalize(compiled.parse(item.output, prefix=item.prefix, tools=_probes.TOOLS))
    except Exception:  # noqa: BLE001
        return True
    want = item.expected
    if got.get("reasoning_content") != (want["reasoning_content"].strip() if "reasoning_content" in want else None):
        return False
    content = got.get("content")
    return content is None or not isinstance(content, str) or want.get("content", "").strip() in content


def _own_template_fits(chat, rendered: list, result: DetectResult) -> list:
    """Where no family fits every probe: a family whose every probe without calls passes, whose
    failing call probes each render the start of the family's calls (``_writes_calls``), and
    which either reads some call probe of this template as written or has its own sample prompts
    reproduced by it (likeness >= 0.9). The chat template writes the family's calls otherwise
    than the model does (llama.cpp's LFM2 template renders JSON inside ``<|tool_call_start|>``
    where the model writes Python calls; vLLM's Llama 3.2 pythonic template leaves string values
    unquoted; its Llama 4 one writes content before a call list the model writes alone). Such a
    probe is excused, as ``excused`` in the failures."""
    outputs = {item.probe.name: item for item in rendered}
    found = []

    def excusable(name, failed):
        template = _template(name)
        return all(
            "tool_calls" in outputs[p].expected
            and _writes_calls(template, outputs[p].output)
            and _only_calls_differ(_compiled(name), outputs[p])
            for p, _ in failed
        )

    for name, failed in result.failures.items():
        if failed and failed[0][1] == _NO_CALL_OPEN:
            continue  # reads no rendered call and its own prompt is not this template's
        if not excusable(name, failed):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            every = parses_all(_compiled(name), rendered, stop_at_first=False, name=name, chat=chat)
        if not excusable(name, every) or len(every) == len(rendered):
            continue
        failing = {p for p, _ in every}
        reads_a_call = any("tool_calls" in item.expected and item.probe.name not in failing for item in rendered)
        if not reads_a_call and _prompt_likeness(chat, name) < 0.9:
            continue
        found.append(name)
        result.failures[name] = [(p, "excused: " + why) for p, why in every]
    return found


def detect(chat_template, *, bos_token: str = "", eos_token: str = "") -> str | None:
    """The bundled family whose format ``chat_template`` (its jinja text) writes, or None.

    A family fits when it parses every probe conversation the chat template renders back to the
    probe's message; ``detect_report`` says which probes failed where none fits."""
    return detect_report(chat_template, bos_token=bos_token, eos_token=eos_token).family
