"""The intermediate representation: what the code generator needs, precomputed.

A validated template becomes a :class:`TemplateIR`: its fields, each delimiter
classified (literal, literal set, regex, zero-width), and its *states* -- the
free state (the implicit field, or the null region that discards text when
there is none) plus one state per explicit field -- each with its watch set in
tie-break order.
"""

from __future__ import annotations

from dataclasses import dataclass, field as dc_field
from typing import Any

import regex

from ..runtime.content import STREAMABLE
from .regexinfo import (
    any_pump,
    branch_leads,
    Lead,
    gap_split,
    is_zero_width,
    lead,
    leans_on_end,
    lookback,
    reach,
    regex_only,
    shortest_prefixes,
    ws_lasting,
    ws_pump,
)
from .validate import REGEX_FLAGS, content_args_findings, format_path

__all__ = ["Delimiter", "Field", "Watch", "State", "TemplateIR", "build_ir", "CLOSE"]

CLOSE = -1




@dataclass(frozen=True)
class Delimiter:
    """One open or close delimiter of a field (or the start anchor)."""

    kind: str  # "literal" | "literal_set" | "regex" | "zero_width"
    key: str  # the template key that produced it ("open", "close_pattern", ...)
    path: str  # e.g. fields.tool_calls.open_pattern
    literals: tuple[str, ...] = ()  # literal kinds: deduplicated, longest first
    extends: bool = False  # literal_set: some literal is a strict prefix of another
    pattern: str | None = None  # regex kinds, and the alternation of a literal set
    groups: tuple[str, ...] = ()  # named groups (regex kinds)
    lead: Lead | None = None  # how every match begins, when known (see regexinfo)
    gap: tuple[str, str] | None = None  # (head pattern, literal tail) of HEAD.*?TAIL patterns
    #: a complete match ending before the end of the text may still change as the text
    #: grows (regex kinds; see regexinfo.leans_on_end): it is checked before it commits
    leans: bool = False

    @property
    def is_literal(self) -> bool:
        return self.kind in ("literal", "literal_set")

    @property
    def regex_source(self) -> str:
        """The regex the reference would compile for this delimiter."""
        if self.pattern is not None:
            return self.pattern
        return "|".join(regex.escape(s) for s in self.literals)


@dataclass
class Field:
    index: int
    name: str
    path: str
    open: Delimiter | None
    close: Delimiter | None
    content: str
    content_args: dict
    repeats: bool
    join: str | None
    optional: bool
    transform: Any
    has_transform: bool
    transform_each: bool
    #: content_args the canonical parsers do not take (see validate.content_args_findings):
    #: parsed by runtime.loose, as the reference reads them
    loose: bool = False

    @property
    def dirty(self) -> bool:
        return self.content not in STREAMABLE

    @property
    def implicit(self) -> bool:
        return self.open is None

    @property
    def typed(self) -> bool:
        """The value may hold tool calls (a dict or list): ``tools`` typing applies to it.
        A scalar content parser without a transform always gives a scalar."""
        return self.dirty or self.has_transform


@dataclass
class Watch:
    """A delimiter watched in a state, and what committing it does."""

    action: int  # field index to open, or CLOSE
    field: Field
    delim: Delimiter

    @property
    def is_open(self) -> bool:
        return self.action != CLOSE


@dataclass
class State:
    index: int  # field index of an explicit state; len(fields) for the free state
    field: Field | None  # None for the null region
    free: bool  # the implicit/null state (watches every open)
    watches: list[Watch] = dc_field(default_factory=list)

    @property
    def fast(self) -> tuple[tuple[str, ...], bool] | None:
        """(first characters, whitespace-led) of all watches, when every one is known."""
        leads = [w.delim.lead for w in self.watches]
        if any(info is None for info in leads):
            return None
        firsts = sorted({c for info in leads for c in info.firsts})
        return tuple(firsts), any(info.ws for info in leads)

    @property
    def reach(self) -> tuple[int, bool] | None:
        """How much consumed text this state's scan may look back on (regexinfo.reach of
        every watched delimiter, a literal none): ``(k, ws)``, or None for all of it."""
        k, ws = 0, False
        for w in self.watches:
            pattern = w.delim.pattern
            if pattern is None:
                continue
            found = None if regex_only(pattern) else reach(pattern)
            if found is None:
                return None
            k, ws = max(k, found[0]), ws or found[1]
        return k, ws

    @property
    def ws_lasting(self) -> bool:
        """A held run of whitespace stays held, unchanged, while only whitespace follows:
        no watched literal starts with whitespace, and every watched regex is
        regexinfo.ws_lasting (no match is only whitespace; a partial one that read only
        whitespace stays partial). See runtime/base.py's lasting holds."""
        for w in self.watches:
            d = w.delim
            if d.is_literal:
                if any(lit[:1].isspace() for lit in d.literals):
                    return False
            elif d.kind != "regex" or d.gap is not None or not ws_lasting(d.pattern):
                return False
        return bool(self.watches)

    @property
    def ws_pump(self) -> int:
        """How long a run of one whitespace character must be (more than this) for the
        state's delimiters to match alike however much longer it grows (regexinfo.ws_pump,
        the most of every watch); -1 when one of them is not known to. See runtime/base.py's
        lasting holds (scan.State.pump)."""
        return self._pump(ws_pump)

    @property
    def any_pump(self) -> int:
        """The same for a run of any one character (regexinfo.any_pump; scan.State.any_pump)."""
        return self._pump(any_pump) if self.ws_pump >= 0 else -1

    def _pump(self, analysis) -> int:
        most = 0
        for w in self.watches:
            source = w.delim.regex_source if (w.delim.pattern is not None or w.delim.literals) else None
            k = None if source is None else analysis(source)
            if k is None:
                return -1
            most = max(most, k)
        return most if self.watches else -1

    @property
    def marks(self) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """When every watch's lead is known (and no whitespace lead is required): (the
        literals, and the required literal prefixes of the regexes that start without
        whitespace; the required prefixes of the whitespace-led regexes). Every match
        starts with one of them: in text that contains none, nothing can complete, and
        what may still be a delimiter is known without running the scan (see
        ``runtime.base.quiet_cut``)."""
        direct: list[str] = []
        ws_led: list[str] = []
        for w in self.watches:
            d = w.delim
            if d.is_literal:
                direct.extend(d.literals)
            elif d.lead is not None and not d.lead.ws_required:
                if d.lead.ws and not d.lead.all_ws:
                    # whitespace leads some alternatives only: each one's prefixes where its
                    # match starts (a partial match of the others holds no whitespace before)
                    leads = branch_leads(d.pattern)
                    if leads is None or any(x.ws_required for x in leads):
                        return None
                    for x in leads:
                        (ws_led if x.ws else direct).extend(x.prefixes)
                else:
                    (ws_led if d.lead.ws else direct).extend(d.lead.prefixes)
            else:
                return None
        if all(len(m) < 2 for m in direct + ws_led):
            return None  # one-character marks are never written partly
        return tuple(dict.fromkeys(direct)), tuple(dict.fromkeys(ws_led))


@dataclass
class TemplateIR:
    fields: list[Field]
    states: list[State]  # explicit states by field index (None-free), then the free state
    implicit: Field | None
    defaults: dict
    anchor: Delimiter
    context: int
    required: tuple[str, ...]


def _classify_literals(value: str | list[str], key: str, path: str) -> Delimiter:
    literals = [value] if isinstance(value, str) else list(dict.fromkeys(value))
    ordered = tuple(sorted(literals, key=len, reverse=True))  # stable: ties keep first-seen order
    firsts = Lead(frozenset(s[0] for s in ordered), False)
    if len(ordered) == 1:
        return Delimiter("literal", key, path, literals=ordered, lead=firsts)
    extends = len(shortest_prefixes(ordered)) < len(ordered)  # (the literals are distinct)
    return Delimiter("literal_set", key, path, literals=ordered, extends=extends, lead=firsts)


def _classify_pattern(pattern: str, key: str, path: str, scan: bool = True) -> Delimiter:
    groups = tuple(regex.compile(pattern, REGEX_FLAGS).groupindex)
    if not scan:  # the kind alone (regex_only, which parses the pattern, only where it decides it)
        kind = "zero_width" if is_zero_width(pattern) and not regex_only(pattern) else "regex"
        return Delimiter(kind, key, path, pattern=pattern, groups=groups)
    leans = leans_on_end(pattern)
    if regex_only(pattern):
        # syntax the analyses do not read (fuzzy matching, ...): the general path, which
        # asks the regex module itself
        return Delimiter("regex", key, path, pattern=pattern, groups=groups, leans=leans)
    kind = "zero_width" if is_zero_width(pattern) else "regex"
    info = lead(pattern) if kind == "regex" else None
    gap = gap_split(pattern) if kind == "regex" else None
    return Delimiter(kind, key, path, pattern=pattern, groups=groups, lead=info, gap=gap, leans=leans)


def _delimiter(spec: dict, literal_key: str, pattern_key: str, parts: tuple, scan: bool = True) -> Delimiter | None:
    if literal_key in spec:
        return _classify_literals(spec[literal_key], literal_key, format_path((*parts, literal_key)))
    if pattern_key in spec:
        return _classify_pattern(spec[pattern_key], pattern_key, format_path((*parts, pattern_key)), scan)
    return None


def build_ir(template: dict, *, scan: bool = True) -> TemplateIR:
    """Build the IR of a template that :func:`validate_template` accepted.

    ``scan=False``: without what only the generated scanners read -- a regex delimiter's
    lead, gap and leans, a field's ``loose``, the look-back ``context`` (left at their
    defaults) --, which the grammar (compiler/grammar.py) does not need and which cost
    most of the build."""
    fields: list[Field] = []
    for index, (name, spec) in enumerate(template["fields"].items()):
        parts = ("fields", name)
        fields.append(
            Field(
                index=index,
                name=name,
                path=format_path(parts),
                open=_delimiter(spec, "open", "open_pattern", parts, scan),
                close=_delimiter(spec, "close", "close_pattern", parts, scan),
                content=spec.get("content", "text"),
                content_args=spec.get("content_args", {}),
                # flags count by their truthiness, as in the reference
                repeats=bool(spec.get("repeats", False)),
                join=spec.get("join"),
                optional=bool(spec.get("optional", True)),
                transform=spec.get("transform"),
                has_transform=spec.get("transform") is not None,
                transform_each=spec.get("transform_each", False),
                loose=scan and bool(content_args_findings(spec.get("content", "text"), spec.get("content_args", {}))),
            )
        )
    implicit = next((f for f in fields if f.implicit), None)

    states: list[State] = []
    for f in fields:
        state = State(index=f.index, field=f, free=False)
        if f.close is not None and not f.implicit:
            state.watches.append(Watch(CLOSE, f, f.close))
        states.append(state)
    free = State(index=len(fields), field=implicit, free=True)
    # The reference breaks ties between delimiters that start at the same place
    # and have the same length by (opens before closes, then field name).
    candidates = [Watch(f.index, f, f.open) for f in fields if f.open is not None]
    if implicit is not None and implicit.close is not None:
        candidates.append(Watch(CLOSE, implicit, implicit.close))
    free.watches = sorted(candidates, key=lambda w: (0 if w.is_open else 1, w.field.name))
    states.append(free)

    anchor = _delimiter(template, "start_anchor", "start_anchor_pattern", (), scan)
    delimiters = [d for f in fields for d in (f.open, f.close) if d is not None] if scan else []
    needs = [-1 if regex_only(d.pattern) else lookback(d.pattern) for d in delimiters if d.pattern is not None]
    context = -1 if -1 in needs else max(needs, default=0)
    return TemplateIR(
        fields=fields,
        states=states,
        implicit=implicit,
        defaults=template.get("defaults", {}),
        anchor=anchor,
        context=context,
        required=tuple(f.name for f in fields if not f.optional),
    )
