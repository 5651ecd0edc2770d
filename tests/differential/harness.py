"""Execution + comparison side of the respc differential suite.

Runs each generated case through the reference (``transformers.utils.chat_parsing``) and through
``respc`` and compares, step by step: construction, ``initial_events``, every ``feed`` call's event
list, ``finalize()``'s (message, events), and the post-finalize ``RuntimeError``s.  Values are compared
through ``norm`` which distinguishes ``1`` / ``1.0`` / ``True``, treats NaN == NaN and keeps dict key order.

The reference can loop forever on some templates (a zero-width open re-firing at the same position
after its region closed zero-width); it runs under an open-count budget plus a wall-clock alarm, and
such cases are counted as "reference diverges -- skipped" instead of mismatches.
"""

from __future__ import annotations

import copy
import json
import signal
import sys
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

import gen

try:  # the reference (test-only dependency)
    from transformers.utils.chat_parsing import ResponseParser as RefParser
    from transformers.utils.chat_parsing import parse_response as ref_parse_response
    from transformers.utils.chat_parsing.response_templates import load_response_template as ref_load
except Exception:  # pragma: no cover - handled by the callers (pytest skip / runner message)
    RefParser = None  # type: ignore[assignment]
    ref_parse_response = None  # type: ignore[assignment]
    ref_load = None  # type: ignore[assignment]


def _warm_reference() -> None:
    """Run the reference's lazy imports now, outside every case's wall-clock alarm: its schema
    of a Python function's type hints imports torch when torch is installed (transformers'
    chat_template_utils), and an alarm firing inside that first import leaves torch half
    loaded for every later case ("partially initialized module 'torch'")."""
    if RefParser is None:
        return
    try:
        from transformers.utils.chat_template_utils import get_json_schema
    except Exception:  # pragma: no cover - an older reference without it
        return

    def probe(a: int) -> int:
        """A probe.

        Args:
            a: a number
        """
        return a

    get_json_schema(probe)


_warm_reference()

try:
    import logging as _logging

    from transformers.utils import logging as _hf_logging

    _hf_logging.set_verbosity_error()
    _logging.getLogger("transformers").setLevel(_logging.ERROR)
except Exception:  # pragma: no cover
    pass


REF_TIMEOUT = 2.0  # seconds, backstop for the reference (the open budget normally fires first)
RESPC_TIMEOUT = 5.0  # seconds, a respc call taking this long is reported as a mismatch (hang)


#: reference errors that stem from documented differences (docs/parity.md): comparison skipped
DOCUMENTED_REF_ERRORS = ("other:DocstringParsingException", "other:TypeHintParsingException")


def _tools_refused(inp) -> bool:
    """Does respc refuse the input's tools list (an item that is not a tool)?"""
    if not inp.tools:
        return False
    from respc.runtime.tools import tool_types

    try:
        tool_types(gen.materialize_tools(inp.tools, inp.tools_as))
    except (TypeError, ValueError):
        return True
    except Exception:  # noqa: BLE001 - any other failure is the comparison's to report
        return False
    return False


class Diverged(BaseException):
    """The reference exceeded its budget (infinite loop)."""


class Timeout(BaseException):
    pass


# --------------------------------------------------------------------------------------------
# Normalisation / comparison
# --------------------------------------------------------------------------------------------


def norm(v: Any) -> Any:
    """Hashable, type-exact canonical form (bool != int != float, NaN == NaN, dict order kept)."""
    if v is None:
        return ("none",)
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int):
        return ("int", int(v)) if type(v) is int else ("int-subclass", type(v).__name__, int(v))
    if isinstance(v, float):
        return (
            ("float", "nan" if v != v else repr(float(v)))
            if type(v) is float
            else ("float-subclass", type(v).__name__, repr(v))
        )
    if isinstance(v, str):
        return ("str", str(v)) if type(v) is str else ("str-subclass", type(v).__name__, str(v))
    if isinstance(v, list):
        return (
            ("list", tuple(norm(x) for x in v))
            if type(v) is list
            else ("list-subclass", type(v).__name__, tuple(norm(x) for x in v))
        )
    if isinstance(v, tuple):
        return ("tuple", tuple(norm(x) for x in v))
    if isinstance(v, dict):
        return (
            ("dict", tuple((norm(k), norm(x)) for k, x in v.items()))
            if type(v) is dict
            else ("dict-subclass", type(v).__name__, tuple((norm(k), norm(x)) for k, x in v.items()))
        )
    return ("other", type(v).__name__, repr(v))


def unordered(n: Any) -> Any:
    """Drop dict key order from a normalised value (used only to classify order-only mismatches)."""
    if isinstance(n, tuple) and n and n[0] in ("dict", "dict-subclass"):
        items = n[-1]
        return (n[0], tuple(sorted(((unordered(k), unordered(v)) for k, v in items), key=repr)))
    if isinstance(n, tuple) and n and n[0] in ("list", "tuple", "list-subclass"):
        return (n[0], tuple(unordered(x) for x in n[-1]))
    return n


def denorm(n: Any) -> Any:
    """Back to plain python (for printing)."""
    tag = n[0]
    if tag == "none":
        return None
    if tag in ("bool", "int", "str"):
        return n[1]
    if tag == "float":
        return float(n[1])
    if tag in ("list", "tuple"):
        return [denorm(x) for x in n[1]]
    if tag == "dict":
        return {str(denorm(k)): denorm(v) for k, v in n[1]}
    return f"<{n}>"


def err_class(e: BaseException) -> str:
    if isinstance(e, Diverged):
        return "diverged"
    if isinstance(e, Timeout):
        return "timeout"
    if isinstance(e, ValueError):
        return "ValueError"
    if isinstance(e, KeyError):
        return "KeyError"
    if isinstance(e, RuntimeError):
        return "RuntimeError"
    return "other:" + type(e).__name__


# --------------------------------------------------------------------------------------------
# Guards
# --------------------------------------------------------------------------------------------

_MAIN = threading.current_thread() is threading.main_thread()


def _on_alarm(signum, frame):  # pragma: no cover - only fires on hangs
    raise Timeout()


class _Alarm:
    def __init__(self, seconds: float):
        self.seconds = seconds
        self.active = False

    def __enter__(self):
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
            self.prev = signal.signal(signal.SIGALRM, _on_alarm)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
            self.active = True
        return self

    def __exit__(self, *exc):
        if self.active:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.prev)
        return False


if RefParser is not None:

    class GuardedRefParser(RefParser):  # type: ignore[misc, valid-type]
        """The reference parser with a budget on explicit region opens (infinite-loop guard)."""

        def __init__(self, template, prefix=None, *, tools=None, budget: int = 10_000):
            self._diff_budget = budget
            self._diff_opens = 0
            super().__init__(template, prefix, tools=tools)

        def _open_explicit(self, events, field, m):  # noqa: D401 - override of a private hook
            self._diff_opens += 1
            if self._diff_opens > self._diff_budget:
                raise Diverged()
            return super()._open_explicit(events, field, m)


# --------------------------------------------------------------------------------------------
# Running one side
# --------------------------------------------------------------------------------------------


@dataclass
class Trace:
    steps: list[tuple] = field(default_factory=list)  # (step-label, "ok"/"err", payload)
    error: str | None = None  # class of the error that ended the trace, if any
    error_msg: str = ""
    error_step: str | None = None
    template_error: bool | None = None  # respc: was the construction error a TemplateError?

    def add_ok(self, label: str, payload: Any) -> None:
        self.steps.append((label, "ok", payload))

    def add_err(self, label: str, e: BaseException, template_error_cls=None) -> None:
        cls = err_class(e)
        self.steps.append((label, "err", cls))
        self.error = cls
        self.error_msg = f"{type(e).__name__}: {e}"[:400]
        self.error_step = label
        if template_error_cls is not None:
            self.template_error = isinstance(e, template_error_cls)


def run_stream(make: Callable[[], Any], chunks: list[str], timeout: float, template_error_cls=None) -> Trace:
    tr = Trace()
    with _Alarm(timeout):
        try:
            try:
                p = make()
            except (Exception, Diverged, Timeout) as e:
                tr.add_err("construct", e, template_error_cls)
                return tr
            raw: list = [p.initial_events]
            tr.add_ok("initial_events", norm(p.initial_events))
            for i, c in enumerate(chunks):
                label = f"feed[{i}]"
                try:
                    ev = p.feed(c)
                except (Exception, Diverged, Timeout) as e:
                    tr.add_err(label, e)
                    return tr
                raw.append(ev)
                tr.add_ok(label, norm(ev))
            try:
                res = p.finalize()
                msg, ev = res
            except (Exception, Diverged, Timeout) as e:
                tr.add_err("finalize", e)
                return tr
            raw.append(ev)
            tr.add_ok("finalize", (norm(msg), norm(ev)))
            # events handed out earlier must not have changed since (no later mutation of shared values)
            tr.add_ok("events_at_end", norm(raw))
            # then scribble over everything handed out: shared state would leak into later cases
            vandalize(raw)
            vandalize(msg)
            for label, fn in (("feed_after_finalize", lambda: p.feed("x")), ("finalize_again", p.finalize)):
                try:
                    fn()
                    tr.add_ok(label, "no-error")
                except (Exception, Diverged, Timeout) as e:
                    tr.steps.append((label, "err", err_class(e)))
        except (Diverged, Timeout) as e:  # raised outside the inner try blocks (rare)
            tr.add_err("?", e)
    return tr


def run_oneshot(fn: Callable[[], Any], timeout: float, template_error_cls=None) -> Trace:
    tr = Trace()
    with _Alarm(timeout):
        try:
            res = fn()
        except (Exception, Diverged, Timeout) as e:
            tr.add_err("parse_response", e, template_error_cls)
            return tr
    tr.add_ok("parse_response", norm(res))
    vandalize(res)
    return tr


def vandalize(obj: Any, _seen: set | None = None) -> None:
    """Mutate every list/dict reachable from ``obj`` (results must be fresh objects)."""
    seen = set() if _seen is None else _seen
    if id(obj) in seen:
        return
    if isinstance(obj, dict):
        seen.add(id(obj))
        for v in list(obj.values()):
            vandalize(v, seen)
        obj["__vandalized__"] = True
    elif isinstance(obj, list):
        seen.add(id(obj))
        for v in list(obj):
            vandalize(v, seen)
        obj.append("__vandalized__")


# --------------------------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------------------------


def compare(ref: Trace, got: Trace, ref_rejects_template: bool) -> tuple[str, str] | None:
    """Return (kind, detail) for the first difference, or None."""
    n = max(len(ref.steps), len(got.steps))
    for i in range(n):
        r = ref.steps[i] if i < len(ref.steps) else None
        g = got.steps[i] if i < len(got.steps) else None
        if r == g:
            if (
                r is not None
                and r[1] == "err"
                and r[0] in ("construct", "parse_response")
                and ref_rejects_template
                and ref.steps[0] is r
            ):
                if got.template_error is False:
                    return (
                        "not-TemplateError",
                        f"{r[0]}: respc raised {got.error_msg!r}, expected respc.TemplateError",
                    )
            continue
        if r is None or g is None:
            return ("step-count", f"step {i}: ref={_short(r)} respc={_short(g)}")
        if r[0] != g[0]:
            return ("step-label", f"step {i}: ref={_short(r)} respc={_short(g)}")
        label = r[0]
        if r[1] == "err" or g[1] == "err":
            return (f"error@{_step_kind(label)}", f"{label}: ref={_short(r)} respc={_short(g)}")
        # both ok, payload differs
        if label == "finalize":
            if unordered(r[2][0]) == unordered(g[2][0]) and unordered(r[2][1]) == unordered(g[2][1]):
                return ("order-only@finalize", "finalize: dict key order differs")
            if r[2][0] != g[2][0]:
                return ("message", "finalize: message differs")
            return ("final-events", "finalize: final events differ")
        if unordered(r[2]) == unordered(g[2]):
            return (f"order-only@{_step_kind(label)}", f"{label}: dict key order differs")
        if label == "events_at_end":
            return ("events-mutated-later", "events returned earlier changed by the end of the stream")
        if label in ("parse_response", "batch"):
            return (f"message@{label}", f"{label}: message differs")
        return (f"events@{_step_kind(label)}", f"{label}: events differ")
    return None


def _step_kind(label: str) -> str:
    return "feed" if label.startswith("feed[") else label


def _short(step) -> str:
    if step is None:
        return "<missing>"
    if step[1] == "err":
        return f"{step[0]} raised {step[2]}"
    return f"{step[0]} ok"


# --------------------------------------------------------------------------------------------
# Case running
# --------------------------------------------------------------------------------------------


@dataclass
class Stats:
    cases: int = 0
    groups: int = 0
    invalid_groups: int = 0
    invalid_cases: int = 0
    skipped_divergent: int = 0
    skipped_documented: int = 0
    mismatches: int = 0
    ref_errors: Counter = field(default_factory=Counter)
    kinds: Counter = field(default_factory=Counter)
    shape: Counter = field(default_factory=Counter)
    failures: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        lines = [
            f"respc differential: {self.cases} cases in {self.groups} template groups "
            f"({self.seconds:.1f}s)",
            f"  invalid-template groups: {self.invalid_groups} ({self.invalid_cases} cases)",
            f"  reference diverges -- skipped: {self.skipped_divergent} cases",
            f"  reference rejects a Python-function tool (documented difference) -- skipped: {self.skipped_documented} cases",
            f"  reference errors (case counts): {dict(sorted(self.ref_errors.items()))}",
            f"  mismatches: {self.mismatches}"
            + (f"  by kind: {dict(self.kinds.most_common())}" if self.kinds else ""),
        ]
        if self.shape:
            lines.append(f"  output shape: {dict(sorted(self.shape.items()))}")
        respc_mod = sys.modules.get("respc")
        if respc_mod is not None and hasattr(respc_mod, "COMPILED_RUNTIME"):
            lines.append(f"  runtime: {'compiled' if respc_mod.COMPILED_RUNTIME else 'pure-Python'}")
        return "\n".join(lines)


def _jsonable(x: Any) -> Any:
    try:
        json.dumps(x)
        return x
    except (TypeError, ValueError):
        return repr(x)


def case_record(
    group: gen.Group,
    ii: int,
    label: str,
    inp: gen.Input,
    chunks,
    ref: Trace,
    got: Trace,
    kind: str,
    detail: str,
) -> dict:
    return {
        "seed": group.seed,
        "group": group.index,
        "input": ii,
        "chunking": label,
        "kind": kind,
        "detail": detail,
        "invalid_kind": group.invalid_kind,
        "template": _jsonable(group.template),
        "prefix": inp.prefix,
        "text": inp.text,
        "chunks": chunks,
        "tools": inp.tools,
        "reference": _trace_dump(ref),
        "respc": _trace_dump(got),
    }


def _trace_dump(tr: Trace) -> list:
    out = []
    for label, status, payload in tr.steps:
        if status == "err":
            msg = tr.error_msg if label == tr.error_step else ""
            out.append({"step": label, "error": payload, "message": msg})
        elif label == "finalize":
            out.append({"step": label, "message": denorm(payload[0]), "events": denorm(payload[1])})
        elif isinstance(payload, tuple):
            out.append({"step": label, "events": denorm(payload)})
        else:
            out.append({"step": label, "result": payload})
    return out


def format_failure(rec: dict) -> str:
    head = (
        f"--- MISMATCH seed={rec['seed']} group={rec['group']} input={rec['input']} chunking={rec['chunking']} "
        f"kind={rec['kind']}\n    {rec['detail']}\n"
        f"    reproduce: python tests/differential/run.py --seed {rec['seed']} --group {rec['group']} -v\n"
    )
    body = json.dumps(
        {k: rec[k] for k in ("template", "prefix", "text", "chunks", "tools", "invalid_kind")},
        ensure_ascii=False,
        indent=None,
    )
    return (
        head
        + "    case: "
        + body
        + "\n    reference: "
        + json.dumps(rec["reference"], ensure_ascii=False)
        + "\n    respc:     "
        + json.dumps(rec["respc"], ensure_ascii=False)
        + "\n"
    )


def _shape(tr: Trace, stats: Stats) -> None:
    for label, status, payload in tr.steps:
        if label == "finalize" and status == "ok":
            msg = denorm(payload[0])
            if isinstance(msg, dict):
                stats.shape["msg_keys>0"] += bool(msg)
                if any(
                    isinstance(v, list) and v and isinstance(v[0], dict) and "function" in v[0]
                    for v in msg.values()
                ) or any(isinstance(v, dict) and "function" in v for v in msg.values()):
                    stats.shape["tool_call_like"] += 1


class Runner:
    def __init__(
        self,
        respc_mod: Any | None,
        *,
        ref_only: bool = False,
        max_failures_kept: int = 50,
        verbose: bool = False,
        log: Callable[[str], None] = print,
    ):
        self.respc = respc_mod
        self.ref_only = ref_only or respc_mod is None
        self.stats = Stats()
        self.max_failures_kept = max_failures_kept
        self.verbose = verbose
        self.log = log
        self.template_error_cls = getattr(respc_mod, "TemplateError", None) if respc_mod is not None else None

    # one (template, input, chunking) comparison
    def _one(self, group, ii, label, inp, chunks, ref: Trace, got_fn, rejects: bool) -> None:
        st = self.stats
        st.cases += 1
        if group.invalid_kind is not None:
            st.invalid_cases += 1
        if _tools_refused(inp):
            # a tools list with an item that is not a tool: the reference skips it, respc raises
            # (TypeError/ValueError naming tools[i]) -- a documented difference (docs/parity.md)
            st.skipped_documented += 1
            return
        if ref.error in ("diverged", "timeout"):
            st.skipped_divergent += 1
            return
        if ref.error in DOCUMENTED_REF_ERRORS:
            # the reference cannot convert a Python-function tool (needs a docstring); respc reads
            # only the type hints -- a documented difference (docs/parity.md)
            st.skipped_documented += 1
            return
        if ref.error:
            st.ref_errors[f"{ref.error}@{_step_kind(ref.error_step)}"] += 1
        if label == "whole":
            _shape(ref, st)
        if self.ref_only:
            return
        got = got_fn()
        diff = compare(ref, got, rejects)
        if diff is None:
            return
        kind, detail = diff
        st.mismatches += 1
        st.kinds[kind] += 1
        if len(st.failures) < self.max_failures_kept:
            rec = case_record(group, ii, label, inp, chunks, ref, got, kind, detail)
            st.failures.append(rec)
            if self.verbose:
                self.log(format_failure(rec))

    def run_group(self, group: gen.Group) -> None:
        st = self.stats
        st.groups += 1
        tpl = group.template
        snapshot = copy.deepcopy(tpl)
        try:
            ref_load(copy.deepcopy(tpl))
            rejects = False
        except ValueError:
            rejects = True
        except Exception:
            rejects = True
        if group.invalid_kind is not None:
            st.invalid_groups += 1
        R = self.respc
        tec = self.template_error_cls
        for ii, inp in enumerate(group.inputs):
            # respc checks a missing prefix before compiling, so only demand TemplateError with a prefix
            need_te = rejects and inp.prefix is not None
            budget = 4 * (len(inp.prefix or "") + len(inp.text)) + 64
            labels = ["whole", "per-char", "random"]
            whole_diverged = False
            for ci, chunks in enumerate(inp.chunkings):
                label = labels[ci] if ci < len(labels) else f"chunking{ci}"

                def mk_ref(chunks=chunks):
                    return GuardedRefParser(
                        tpl, inp.prefix, tools=gen.materialize_tools(inp.tools, inp.tools_as), budget=budget
                    )

                ref = run_stream(mk_ref, chunks, REF_TIMEOUT)
                if ci == 0 and ref.error in ("diverged", "timeout"):
                    whole_diverged = True

                def got_fn(chunks=chunks):
                    return run_stream(
                        lambda: R.ResponseParser(
                            tpl, inp.prefix, tools=gen.materialize_tools(inp.tools, inp.tools_as)
                        ),
                        chunks,
                        RESPC_TIMEOUT,
                        tec,
                    )

                self._one(group, ii, label, inp, chunks, ref, got_fn, need_te)

            # one-shot parse_response
            if whole_diverged:
                st.cases += 1
                st.skipped_divergent += 1
            else:
                ref = run_oneshot(
                    lambda: ref_parse_response(
                        inp.text, tpl, prefix=inp.prefix, tools=gen.materialize_tools(inp.tools, inp.tools_as)
                    ),
                    REF_TIMEOUT,
                )
                self._one(
                    group,
                    ii,
                    "parse_response",
                    inp,
                    [inp.text],
                    ref,
                    lambda: run_oneshot(
                        lambda: R.parse_response(
                            inp.text,
                            tpl,
                            prefix=inp.prefix,
                            tools=gen.materialize_tools(inp.tools, inp.tools_as),
                        ),
                        RESPC_TIMEOUT,
                        tec,
                    ),
                    need_te,
                )
            # batch parse_response (respc accepts a list of texts)
            if inp.batch and inp.batch_texts:
                texts = inp.batch_texts

                def ref_batch():
                    out = []
                    for t in texts:
                        p = GuardedRefParser(
                            tpl,
                            inp.prefix,
                            tools=gen.materialize_tools(inp.tools, inp.tools_as),
                            budget=4 * (len(inp.prefix or "") + len(t)) + 64,
                        )
                        p.feed(t)
                        out.append(p.finalize()[0])
                    return out

                ref = run_oneshot(ref_batch, REF_TIMEOUT)
                self._one(
                    group,
                    ii,
                    "batch",
                    inp,
                    texts,
                    ref,
                    lambda: run_oneshot(
                        lambda: R.parse_response(
                            list(texts),
                            tpl,
                            prefix=inp.prefix,
                            tools=gen.materialize_tools(inp.tools, inp.tools_as),
                        ),
                        RESPC_TIMEOUT,
                        tec,
                    ),
                    need_te,
                )
        if tpl != snapshot or (
            json.dumps(tpl, sort_keys=False, default=repr)
            != json.dumps(snapshot, sort_keys=False, default=repr)
        ):
            st.mismatches += 1
            st.kinds["template-mutated"] += 1
            st.failures.append(
                {
                    "seed": group.seed,
                    "group": group.index,
                    "kind": "template-mutated",
                    "template": _jsonable(snapshot),
                    "after": _jsonable(tpl),
                }
            )


def run(
    seed: int,
    min_cases: int,
    *,
    respc_mod: Any | None,
    inputs_per_group: int = 8,
    start_group: int = 0,
    only_group: int | None = None,
    ref_only: bool = False,
    verbose: bool = False,
    log=print,
    time_limit: float | None = None,
    progress: bool = False,
) -> Stats:
    runner = Runner(respc_mod, ref_only=ref_only, verbose=verbose, log=log)
    t0 = time.perf_counter()
    g = start_group
    while True:
        if only_group is not None:
            if g > only_group:
                break
            g = only_group
        elif runner.stats.cases >= min_cases:
            break
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            break
        group = gen.gen_group(seed, g, inputs_per_group)
        tg = time.perf_counter()
        try:
            runner.run_group(group)
        except Exception:  # harness bug: report, don't hide
            runner.stats.mismatches += 1
            runner.stats.kinds["harness-crash"] += 1
            runner.stats.failures.append(
                {"seed": seed, "group": g, "kind": "harness-crash", "detail": traceback.format_exc()}
            )
        if progress:
            dt = time.perf_counter() - tg
            if dt > 3.0:
                log(f"[slow group {g}: {dt:.1f}s]")
            if g % 100 == 0:
                log(
                    f"[group {g}: {runner.stats.cases} cases, {runner.stats.mismatches} mismatches, {time.perf_counter() - t0:.0f}s]"
                )
        g += 1
    runner.stats.seconds = time.perf_counter() - t0
    return runner.stats
