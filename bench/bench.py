"""respc benchmarks, side by side with the reference (transformers 5.24.0) when installed.

    python bench/bench.py            # everything (a few minutes)
    python bench/bench.py --quick    # fewer repetitions, smaller long-stream sizes

Every figure is a median over interleaved runs (respc, reference, floor, respc, ...) in
one process, and every ratio the median of the ratios within each round of runs, so the
ratios compare like with like on a noisy, shared machine. Inputs are
fixed files under bench/samples/ and text derived from them deterministically.
Without transformers installed, only respc's own figures are printed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLES = HERE / "samples"
ROOT = HERE.parent
WORKLOADS = ["qwen3", "qwen3-coder", "gpt-oss", "command-a"]

os.environ.setdefault("RESPC_CACHE_DIR", tempfile.mkdtemp(prefix="respc-bench-cache-"))

import respc  # noqa: E402
from respc.compiler import compile_source, load_template_file  # noqa: E402

try:
    import logging

    logging.getLogger("transformers").setLevel(logging.ERROR)
    from transformers.utils.chat_parsing import ResponseParser as RefParser  # noqa: E402
    from transformers.utils.chat_parsing import parse_response as ref_parse  # noqa: E402
    from transformers.utils.chat_parsing.response_templates import load_response_template  # noqa: E402
    from transformers import __version__ as transformers_version  # noqa: E402
except ImportError:  # the reference is optional
    RefParser = ref_parse = load_response_template = transformers_version = None

perf = time.perf_counter


def load_workload(name: str) -> dict:
    return {
        "name": name,
        "template": load_template_file(ROOT / "templates" / f"{name}.json"),
        "text": (SAMPLES / f"{name}.txt").read_text(encoding="utf-8"),
        "prefix": (SAMPLES / f"{name}.prefix.txt").read_text(encoding="utf-8"),
        "tools": json.loads((SAMPLES / f"{name}.tools.json").read_text(encoding="utf-8")),
    }


def chunks_of(text: str, size: int = 4) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


#: --cold: force a full garbage collection before every sample (flushes the CPU caches)
COLD = False


class Medians(dict):
    """Median seconds per call, by name; ``samples`` keeps every round's times."""

    def __init__(self, samples: dict[str, list[float]]):
        super().__init__({name: statistics.median(values) for name, values in samples.items()})
        self.samples = samples

    def ratio(self, a: str, b: str) -> float:
        """The median over the rounds of ``a``'s time / ``b``'s time in the same round.

        Both were timed moments apart, so a drift of the machine's speed between rounds
        (seen here: phases where everything runs at half speed) cancels out, which a
        ratio of the two medians does not do when the phases fall unevenly on a and b.
        """
        return statistics.median(x / y for x, y in zip(self.samples[a], self.samples[b]))


def interleaved(fns: dict, repeats: int, inner: int = 1) -> Medians:
    """Median seconds per call of each callable; each sample times ``inner`` calls, and
    the callables take turns ``repeats`` times, the order rotating every round so none
    always runs right after the same other one.

    As with ``timeit``, the garbage collector is paused while the samples run (garbage
    is collected before and after). With ``--cold``, a full collection runs right
    before every sample instead: walking every object of the process flushes the CPU
    caches, so each sample starts cold and is charged for its code's size.
    """
    times: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():
        fn()  # warm up
    order = list(fns.items())
    gc.collect()
    try:
        for round_ in range(repeats):
            shift = round_ % len(order)
            for name, fn in order[shift:] + order[:shift]:
                if COLD:
                    gc.enable()
                    gc.collect()
                gc.disable()
                start = perf()
                for _ in range(inner):
                    fn()
                times[name].append((perf() - start) / inner)
    finally:
        gc.enable()
        gc.collect()
    return Medians(times)


class FloorParser:
    """The floor: a minimal feed loop (append a chunk, one str.find, build one event dict)."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def feed(self, text: str) -> list[dict]:
        self.parts.append(text)
        text.find("<")
        return [{"type": "region_chunk", "field": "content", "text": text, "dirty": False}]


def stream_respc(compiled, chunks, prefix="", tools=None, **options):
    def run():
        parser = compiled.parser(prefix=prefix, tools=tools, **options)
        for chunk in chunks:
            parser.feed(chunk)
        return parser.finalize()

    return run


def stream_ref(ref_template, chunks, prefix="", tools=None):
    def run():
        parser = RefParser(ref_template, prefix=prefix, tools=tools)
        for chunk in chunks:
            parser.feed(chunk)
        return parser.finalize()

    return run


#: --ref-cap: the most seconds one reference case may take in the tail and linear sections
#: (the reference is quadratic on their longer inputs); a case cut there shows as "> N s"
REF_CAP = 60.0


class _Cut(Exception):
    """A reference case ran past REF_CAP."""


def capped(run, cap: float | None = None):
    """``(seconds, result)`` of ``run()``, or ``(None, None)`` when it ran past ``cap`` seconds
    (REF_CAP by default): a timer signal interrupts it (the reference is Python; the regex
    module checks for signals while it matches)."""
    import signal

    cap = REF_CAP if cap is None else cap

    def cut(signum, frame):
        raise _Cut

    previous = signal.signal(signal.SIGALRM, cut)
    signal.setitimer(signal.ITIMER_REAL, cap)
    start = perf()
    try:
        result = run()
        return perf() - start, result
    except _Cut:
        return None, None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def shown_s(seconds: float | None, digits: int = 3) -> str:
    """Seconds, or "> N s" for a case cut at REF_CAP."""
    return f"> {REF_CAP:g} s" if seconds is None else f"{seconds:.{digits}f}"


class Rows:
    """A table printed row by row as each is measured (a long section shows its progress);
    ``done()`` returns it again, aligned."""

    def __init__(self, title: str, headers: list[str]):
        self.title, self.headers, self.rows = title, headers, []
        print(f"### {title}\n\n| " + " | ".join(headers) + " |\n|" + "|".join("---" for _ in headers) + "|", flush=True)

    def add(self, row: list[str]) -> None:
        row = [cell.replace("|", "\\|") for cell in row]  # (a label's <|im_end|> would end its cell)
        self.rows.append(row)
        print("| " + " | ".join(row) + " |", flush=True)

    def done(self) -> str:
        return f"(aligned)\n\n### {self.title}\n\n" + table(self.headers, self.rows)


def stream_floor(chunks):
    def run():
        parser = FloorParser()
        for chunk in chunks:
            parser.feed(chunk)

    return run


def fmt_us(seconds: float) -> str:
    return f"{seconds * 1e6:.2f}"


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in rows]
    return "\n".join([line, sep, *body])


def bench_streaming(workloads: list[dict], repeats: int) -> str:
    rows = []
    for w in workloads:
        compiled = respc.compile_template(w["template"])
        chunks = chunks_of(w["text"])
        fns = {"respc": stream_respc(compiled, chunks, w["prefix"], w["tools"]), "floor": stream_floor(chunks)}
        if RefParser is not None:
            ref_template = load_response_template(w["template"])
            assert fns["respc"]() == stream_ref(ref_template, chunks, w["prefix"], w["tools"])(), w["name"]
            fns["reference"] = stream_ref(ref_template, chunks, w["prefix"], w["tools"])
        med = interleaved(fns, repeats)
        per = {k: v / len(chunks) for k, v in med.items()}
        row = [w["name"], f"{len(w['text']) / 1024:.1f} KB", str(len(chunks)), fmt_us(per["respc"])]
        if "reference" in per:
            row += [fmt_us(per["reference"]), f"{med.ratio('reference', 'respc'):.1f}x"]
        row += [fmt_us(per["floor"]), f"{med.ratio('respc', 'floor'):.2f}x"]
        rows.append(row)
    headers = ["workload", "size", "chunks", "respc us/chunk"]
    if RefParser is not None:
        headers += ["reference us/chunk", "speed-up"]
    headers += ["floor us/chunk", "respc / floor"]
    return f"### Streaming, 4-character chunks ({repeats} rounds)\n\n" + table(headers, rows)


def long_output(size: int) -> str:
    """A Qwen3-style reply whose reasoning and content together reach ``size`` characters."""
    prose = (SAMPLES / "qwen3.txt").read_text(encoding="utf-8")
    prose = prose.replace("<", "(").replace(">", ")")  # plain text: no delimiters inside
    half = size // 2
    body = (prose * (half // len(prose) + 1))[:half]
    return f"<think>{body}</think>{body}<|im_end|>"


def bench_flatness(sizes: list[int], ref_max: int, repeats: int) -> str:
    template = load_template_file(ROOT / "templates" / "qwen3.json")
    compiled = respc.compile_template(template)
    ref_template = load_response_template(template) if RefParser is not None else None
    streams = {size: chunks_of(long_output(size)) for size in sizes}
    # respc's sizes take turns in one interleaved run, so "vs smallest" compares like with
    # like on a machine whose speed drifts; the reference (quadratic: one run past 100 KB)
    # is timed on its own
    mine = interleaved({size: stream_respc(compiled, chunks) for size, chunks in streams.items()}, repeats)
    rows = []
    base = None
    for size, chunks in streams.items():
        per = {"respc": mine[size] / len(chunks)}
        if ref_template is not None and size <= ref_max:
            reps_ref = repeats if size <= 100_000 else 1
            per["reference"] = interleaved({"reference": stream_ref(ref_template, chunks)}, reps_ref)["reference"] / len(chunks)
        base = base or size
        scale = len(streams[base]) / len(chunks)  # per chunk
        row = [f"{size / 1000:,.0f} KB", fmt_us(per["respc"]), f"{mine.ratio(size, base) * scale:.2f}x"]
        if ref_template is not None:
            row += [fmt_us(per["reference"]), f"{per['reference'] / per['respc']:.1f}x"] if "reference" in per else ["-", "-"]
        rows.append(row)
    headers = ["output", "respc us/chunk", "vs smallest"]
    if ref_template is not None:
        headers += ["reference us/chunk", "speed-up"]
    return "### Per-chunk cost against output length (qwen3, 4-character chunks)\n\n" + table(headers, rows)


#: a tool header with a lazy gap (HEAD.*?TAIL), as gpt-oss's was before the bundled template
#: took the header's real grammar: held until TAIL can have appeared (the *stable* path)
LAZY_GAP_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|start|>assistant",
    "fields": {
        "tool_calls": {
            "open_pattern": "<\\|channel\\|>commentary to=functions\\.(?P<name>\\w+).*?<\\|message\\|>",
            "close": "<|call|>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"open": "<|channel|>final<|message|>", "close": ["<|return|>", "<|end|>"], "content": "text"},
    },
}


def bench_held_regex(size: int, small: int, repeats: int) -> str:
    """A tool header whose regex stays pending over a long text: the lazy-gap header over
    ``size`` characters of prose, and the bundled gpt-oss header (``...json\\s*<|message|>``)
    over ``small`` characters of whitespace, which its ``\\s*`` keeps pending."""
    header = "<|channel|>commentary to=functions.get_weather <|constrain|>json"
    cases = [
        ("lazy gap (HEAD.*?TAIL), prose", LAZY_GAP_TEMPLATE, size, "lorem ipsum dolor sit amet, "),
        ("bundled gpt-oss, whitespace", load_template_file(ROOT / "templates" / "gpt-oss.json"), small, " \n\t  \n"),
    ]
    rows = []
    headers = ["header", "held text", "respc s"]
    for label, template, length, unit in cases:
        compiled = respc.compile_template(template)
        filler = (unit * (length // len(unit) + 1))[: length - len(header)]
        chunks = chunks_of(header + filler)
        run = stream_respc(compiled, chunks)
        med = interleaved({"respc": run}, repeats)
        if RefParser is not None:
            # the reference is quadratic here (tens of seconds for the long one): one timed
            # run, which also checks that both give the same result
            start = perf()
            expected = stream_ref(load_response_template(template), chunks)()
            med["reference"] = perf() - start
            assert run() == expected
        row = [label, f"{length / 1000:.0f} KB", f"{med['respc']:.3f}"]
        if "reference" in med:
            speed_up = med["reference"] / med["respc"]
            row += [f"{med['reference']:.3f}", f"{speed_up:.0f}x" if speed_up >= 10 else f"{speed_up:.1f}x"]
        rows.append(row)
    if RefParser is not None:
        headers += ["reference s", "speed-up"]
    return "### A regex delimiter left pending (a tool header without its <|message|>)\n\n" + table(headers, rows)


#: long holds: text a delimiter may still grow from, fed in 4-character chunks (a model stuck
#: on whitespace, a tool name or header written for a megabyte): (label, template, head, unit)
LONG_HOLDS = [
    ("whitespace run (qwen3: \\s*<|im_end|>)", "qwen3", "Hello", " "),
    ("tool name (qwen3-coder: <function=[^>\\n]+>)", "qwen3-coder", "<tool_call>\n<function=", "x"),
    ("header whitespace (gpt-oss: ...\\s*<|message|>)", "gpt-oss", "<|channel|>commentary to=functions.f <|constrain|>json", " "),
    ("tool name (gpt-oss: to=functions.NAME, recipient first)", "gpt-oss",
     "<|channel|>analysis<|message|>hm<|end|><|start|>assistant to=functions.f", "x"),
    ("call list (lfm2: open's lookahead over the list)", "lfm2", '<|tool_call_start|>[get_weather(city="', "x"),
]


#: text after the end of turn (pad tokens, the next turn), fed in 4-character chunks: the
#: end-of-turn close ``...[\s\S]*`` holds it to finalize (see docs/models.md)
TAILS = [
    ("pads after <|im_end|> (qwen3)", "qwen3", "The answer is 42.<|im_end|>", "<pad>"),
    ("next turns after <|user|> (glm-4.5)", "glm-4.5", "\n<think>a</think>\nok<|user|>", "\nthanks<|assistant|>"),
    ("pads after a call's </s> (mistral-small-3.1)", "mistral-small-3.1",
     '[TOOL_CALLS] [{"name": "f", "arguments": {}, "id": "abcdefghi"}]</s>', "</s>"),
    ("calls after a call's <|message_sep|> (gigachat3)", "gigachat3",
     '<|function_call|>{"name": "f", "arguments": {"a": 1}}<|message_sep|>', "\n{}<|message_sep|>"),
]


def bench_long_holds(sizes: list[int], ref_sizes: list[int], holds: list = LONG_HOLDS, title: str = "") -> str:
    """Each long hold at growing sizes: respc's cost per chunk stays flat (linear in all);
    the reference rescans the held text at every chunk (quadratic: its cost per chunk grows
    with the size, so it runs at the small sizes only, each case cut at REF_CAP seconds; the
    speed-up where both ran). Rows print as they are measured; the growth columns give the
    time of each size over the one before (for 10x the size: ~10x linear, ~100x quadratic)."""
    headers = ["held text", "size", "chunks", "respc s", "respc us/chunk", "respc growth"]
    if RefParser is not None:
        headers += ["reference s", "reference us/chunk", "reference growth", "speed-up"]
    rows = Rows(title or "Long holds, 4-character chunks: linear (flat cost per chunk) at any length", headers)
    for label, name, head, unit in holds:
        template = load_template_file(ROOT / "templates" / f"{name}.json")
        compiled = respc.compile_template(template)
        ref_template = load_response_template(template) if RefParser is not None else None
        before = ref_before = None
        for size in sorted(set(sizes) | (set(ref_sizes) if ref_template is not None else set())):
            chunks = chunks_of(head + unit * size)
            row = [label, f"{size:,}", str(len(chunks))]
            mine = interleaved({"respc": stream_respc(compiled, chunks)}, 3)["respc"]
            row += [f"{mine:.3f}", fmt_us(mine / len(chunks)), _growth(mine, size, before)]
            before = (mine, size)
            if ref_template is not None:
                elapsed = None
                if size in ref_sizes and (ref_before is None or ref_before[0] is not None):
                    elapsed, expected = capped(stream_ref(ref_template, chunks))
                    if elapsed is not None:
                        assert stream_respc(compiled, chunks)() == expected, (label, size)
                    grown = _growth(elapsed, size, ref_before) if elapsed else "-"
                    row += [shown_s(elapsed), fmt_us(elapsed / len(chunks)) if elapsed else "-", grown,
                            f"{elapsed / mine:.0f}x" if elapsed else f"> {REF_CAP / mine:.0f}x"]
                    ref_before = (elapsed, size)
                else:
                    row += ["-", "-", "-", "-"]
            rows.add(row)
    return rows.done()


def _growth(seconds: float, size: int, before: tuple | None) -> str:
    """Time over the time at the size before, for how many times the size ("-": the first)."""
    if before is None or not before[0]:
        return "-"
    return f"{seconds / before[0]:.1f}x for {size / before[1]:g}x"


def _first_tool_sample(name: str) -> tuple[dict, dict]:
    data = json.loads((ROOT / "templates" / "samples" / f"{name}.json").read_text())
    for case in data["cases"]:
        if "tool_calls" in case.get("expected", {}):
            return data, case
    return data, data["cases"][0]


def _region_spans(compiled, case: dict, tools) -> list[tuple[str, int, int]]:
    """(field, start, end) of every region delimiter in the sample's output (output offsets)."""
    parser = compiled.parser(prefix=case["prefix"], tools=tools, spans=True)
    base = len(compiled.Parser.cut_prefix(case["prefix"])) if case["prefix"] else 0
    events = list(parser.initial_events) + parser.feed(case["output"]) + parser.finalize()[1]
    return [(e["field"], e["start"] - base, e["end"] - base) for e in events
            if isinstance(e, dict) and e["type"] in ("region_open", "region_close")]


def _timed(run, repeats: int = 1) -> float:
    """The median of ``repeats`` timings of ``run()``."""
    times = []
    for _ in range(repeats):
        start = perf()
        try:
            run()
        except (ValueError, TypeError):
            pass  # (a run where the template takes none: what finding that out cost counts)
        times.append(perf() - start)
    return statistics.median(times)


def bench_linear(families: list[str], run: int, calls: int, ref: bool, repeats: int = 3) -> str:
    """Whitespace runs at every delimiter boundary of each family's first tool sample (the
    worst boundary shown) and its tool calls repeated, at sizes n and 4n, whole and streamed
    (4-character chunks): the growth ratio of 4x the input is about 4 when linear, 16 when
    quadratic (medians of ``repeats`` runs; the boundaries are ranked by one run each).
    The reference whole beside it at both sizes (one run each, cut at REF_CAP seconds), with
    its growth. Rows print as they are measured."""
    headers = ["family", "input (n / 4n)", "whole ms", "growth", "streamed ms", "growth"]
    if ref:
        headers += ["reference whole ms", "reference growth"]
    rows = Rows("Linear work: whitespace runs at delimiter boundaries, many tool calls "
                "(growth of 4x the input: ~4x linear, ~16x quadratic)", headers)
    for name in families:
        compiled = respc.load(name)
        data, case = _first_tool_sample(name)
        tools, out, prefix = data.get("tools"), case["output"], case["prefix"]
        spans = _region_spans(compiled, case, tools)
        ref_template = ref and RefParser is not None

        def measure(texts, times=1):
            whole = [
                _timed(lambda t=t: compiled.Parser.parse_whole(prefix, t, tools, regex_timeout=None, regex_budget=None), times)
                for t in texts
            ]
            stream = [
                _timed(stream_respc(compiled, chunks_of(t), prefix, tools, regex_timeout=None, regex_budget=None), times)
                for t in texts
            ]  # (no time bounds, as whole: on a loaded machine the budget, wall time, may run out)
            return whole, stream

        worst = None
        for at in sorted({k for _, a, b in spans for k in (a, b) if 0 <= k <= len(out)}):
            texts = [out[:at] + " " * k + out[at:] for k in (run, 4 * run)]
            whole, stream = measure(texts)
            if worst is None or max(whole[1], stream[1]) > max(worst[1][1], worst[2][1]):
                worst = (at, whole, stream, texts)
        if repeats > 1:  # the worst boundary again, for medians
            worst = (worst[0], *measure(worst[3], repeats), worst[3])
        calls_at = [(a, b) for f, a, b in spans if f == "tool_calls"]
        if calls_at:
            a, b = max(calls_at[0][0], 0), calls_at[-1][1]
            call_texts = [out[:a] + out[a:b] * k + out[b:] for k in (calls, 4 * calls)]
            call_whole, call_stream = measure(call_texts, repeats)
        for label, (whole, stream), texts in (
            (f"{run:,}/{4 * run:,} spaces at {worst[0]}", (worst[1], worst[2]), worst[3]),
            *([(f"{calls}/{4 * calls} calls", (call_whole, call_stream), call_texts)] if calls_at else []),
        ):
            row = [name, label]
            for pair in (whole, stream):
                row += [f"{pair[0] * 1000:.1f} / {pair[1] * 1000:.1f}", f"{pair[1] / max(pair[0], 1e-9):.1f}x"]
            if ref_template:
                ref_times = []
                for text in texts:
                    if ref_times and ref_times[-1] is None:
                        ref_times.append(None)  # (the smaller one was cut already)
                        continue
                    ref_times.append(capped(lambda t=text: _ref_outcome(t, compiled.template, prefix, tools))[0])
                shown = [f"> {REF_CAP * 1000:,.0f}" if t is None else f"{t * 1000:.1f}" for t in ref_times]
                row += [" / ".join(shown), f"{ref_times[1] / max(ref_times[0], 1e-9):.1f}x" if None not in ref_times else "-"]
            rows.add(row)
    return rows.done()


def _ref_outcome(text: str, template: dict, prefix: str, tools) -> object:
    """The reference's whole parse (an error it raises is its outcome, as respc's are)."""
    try:
        return ref_parse(text, template, prefix=prefix, tools=tools)
    except (ValueError, TypeError) as error:
        return type(error).__name__


def bench_serving(workloads: list[dict], repeats: int) -> str:
    """The serving extensions' cost: streaming with spans=True and on_malformed="event",
    against the default parser (both off), on the same chunks."""
    rows = []
    for w in workloads:
        compiled = respc.compile_template(w["template"])
        chunks = chunks_of(w["text"])

        def stream(**options):
            def run():
                parser = compiled.parser(prefix=w["prefix"], tools=w["tools"], **options)
                for chunk in chunks:
                    parser.feed(chunk)
                return parser.finalize()

            return run

        fns = {
            "default": stream(),
            "spans": stream(spans=True),
            "event": stream(on_malformed="event"),
            "both": stream(spans=True, on_malformed="event"),
        }
        med = interleaved(fns, repeats)
        rows.append(
            [w["name"], fmt_us(med["default"] / len(chunks))]
            + [f"{fmt_us(med[k] / len(chunks))} ({med.ratio(k, 'default'):.2f}x)" for k in ("spans", "event", "both")]
        )
    headers = ["workload", "default us/chunk", "spans=True", 'on_malformed="event"', "both"]
    return f"### Serving extensions' cost, streaming 4-character chunks ({repeats} rounds)\n\n" + table(headers, rows)


def bench_one_shot(workloads: list[dict], repeats: int) -> str:
    rows = []
    for w in workloads:
        compiled = respc.compile_template(w["template"])  # a bundled template: its bundled module
        text, prefix, tools, template = w["text"], w["prefix"], w["tools"], w["template"]
        # the same template with one more default is not a bundled one: compiled now, its
        # generated scans run as Python (over the compiled runtime, when installed so)
        other = {**template, "defaults": {**template.get("defaults", {}), "bench": "compiled at run time"}}
        at_run_time = respc.compile_template(other)
        fns = {
            "compiled": lambda: compiled.parse(text, prefix=prefix, tools=tools),
            "dict": lambda: respc.parse_response(text, template, prefix=prefix, tools=tools),
            "run time": lambda: at_run_time.parse(text, prefix=prefix, tools=tools),
        }
        if ref_parse is not None:
            assert fns["compiled"]() == ref_parse(text, template, prefix=prefix, tools=tools)
            assert fns["run time"]() == ref_parse(text, other, prefix=prefix, tools=tools)
            fns["reference"] = lambda: ref_parse(text, template, prefix=prefix, tools=tools)
            fns["reference, other"] = lambda: ref_parse(text, other, prefix=prefix, tools=tools)
        med = interleaved(fns, repeats, inner=20)
        row = [w["name"], f"{med['compiled'] * 1e3:.3f}", f"{med['dict'] * 1e3:.3f}", f"{med['run time'] * 1e3:.3f}"]
        if "reference" in med:
            row += [
                f"{med['reference'] * 1e3:.3f}",
                f"{med.ratio('reference', 'compiled'):.1f}x",
                f"{med.ratio('reference', 'dict'):.1f}x",
                f"{med.ratio('reference, other', 'run time'):.1f}x",
            ]
        rows.append(row)
    headers = ["workload", "respc CompiledTemplate ms", "respc template dict ms", "respc compiled at run time ms"]
    if ref_parse is not None:
        headers += ["reference ms", "speed-up (compiled)", "speed-up (dict)", "speed-up (run time)"]
    return (
        "### One-shot parse of a whole reply (with its prefix and tools)\n\n"
        "CompiledTemplate and template dict: the bundled template (its precompiled module); "
        "compiled at run time: a copy with one more default, which is not a bundled template\n\n"
        + table(headers, rows)
    )


def bench_memory(size: int) -> str:
    compiled = respc.load("qwen3")
    text = long_output(size)
    chunks = chunks_of(text)
    del text
    gc.collect()
    tracemalloc.start()
    parser = compiled.parser(prefix="")
    for chunk in chunks:
        parser.feed(chunk)
    message, _ = parser.finalize()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    message_size = sum(sys.getsizeof(v) for v in message.values())
    return (
        "### Memory of a long stream (tracemalloc peak while streaming, qwen3)\n\n"
        + table(
            ["stream", "peak", "final message", "peak / message"],
            [[f"{size / 1e6:.0f} MB", f"{peak / 1e6:.1f} MB", f"{message_size / 1e6:.1f} MB", f"{peak / message_size:.2f}x"]],
        )
    )


def bench_compile(workloads: list[dict], repeats: int) -> str:
    """What a template new to the process costs before it parses (validation, code
    generation, loading the module; the disk cache off), beside what the reference spends
    on its first parse of a typical reply with a template (load + parse)."""
    from respc import api

    rows = []
    saved = os.environ.get("RESPC_CACHE_DIR")
    os.environ["RESPC_CACHE_DIR"] = ""  # a cold compile: nothing on disk either
    try:
        for w in workloads:
            template, text, prefix, tools = w["template"], w["text"], w["prefix"], w["tools"]
            cold, ref_first, formatted = [], [], []
            for i in range(repeats):
                variant = {**template, "defaults": {**template.get("defaults", {}), "bench": f"cold {i}"}}
                api._BY_CANONICAL.clear()
                api._BY_OBJECT.clear()
                gc.collect()
                start = perf()
                respc.compile_template(variant)
                cold.append(perf() - start)
                if RefParser is not None:
                    other = {**template, "defaults": {**template.get("defaults", {}), "bench": f"ref {i}"}}
                    gc.collect()
                    start = perf()
                    ref_parse(text, other, prefix=prefix, tools=tools)
                    ref_first.append(perf() - start)
                if i < 3:
                    start = perf()
                    compile_source(variant, format=True)
                    formatted.append(perf() - start)
            row = [w["name"], f"{statistics.median(cold) * 1e3:.2f} ms"]
            if RefParser is not None:
                row.append(f"{statistics.median(ref_first) * 1e3:.2f} ms")
            row.append(f"{statistics.median(formatted) * 1e3:.0f} ms")
            rows.append(row)
    finally:
        if saved is None:
            os.environ.pop("RESPC_CACHE_DIR", None)
        else:
            os.environ["RESPC_CACHE_DIR"] = saved
    headers = ["template", "respc cold compile (ready to parse)"]
    if RefParser is not None:
        headers.append("reference: load + parse one reply")
    headers.append("black-formatted source (shown only: respc compile, .source)")
    out = "### Compile time: a template new to the process\n\n" + table(headers, rows)
    template = workloads[0]["template"]
    lookups = []
    respc.compile_template(template)
    n = 2000
    start = perf()
    for _ in range(n):
        respc.compile_template(template)
    lookups.append(["cached lookup (the same template dict again)", f"{(perf() - start) / n * 1e6:.1f} us"])
    copies = [json.loads(json.dumps(template)) for _ in range(n)]
    start = perf()
    for copy in copies:
        respc.compile_template(copy)
    lookups.append(["cached lookup (an equal dict, new object)", f"{(perf() - start) / n * 1e6:.1f} us"])
    compiled = respc.compile_template(template)
    start = perf()
    for _ in range(n):
        respc.compile_template(compiled)
    lookups.append(["cached lookup (CompiledTemplate)", f"{(perf() - start) / n * 1e6:.2f} us"])
    return out + f"\n\n### Lookups ({workloads[0]['name']} template)\n\n" + table(["what", "median"], lookups)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and smaller long streams")
    parser.add_argument(
        "--only",
        choices=["streaming", "flat", "held", "holds", "tail", "linear", "serving", "oneshot", "memory", "compile"],
    )
    parser.add_argument(
        "--run", type=int, help="linear: the whitespace run's length n (and 4n); default 4,000 (1,000 with --quick)"
    )
    parser.add_argument(
        "--calls", type=int, help="linear: how many tool calls n (and 4n); default 500 (50 with --quick)"
    )
    parser.add_argument(
        "--families", help="linear: the bundled families to run, comma-separated (default: every one with samples)"
    )
    parser.add_argument(
        "--tail-size", type=int, help="holds, tail: respc's largest held text in characters (default 4,000,000; "
        "1,000,000 with --quick), also run at a tenth and a hundredth of it"
    )
    parser.add_argument(
        "--ref-cap", type=float, default=60.0,
        help="tail, linear: the most seconds one reference case may take (default 60); a case cut there "
        "shows as '> N s'",
    )
    parser.add_argument(
        "--cpu", action="store_true", help="time with the process's CPU time, not wall time: on a loaded machine a "
        "short sample's wall time is mostly the wait for a core (the reference's cap stays wall time)",
    )
    parser.add_argument(
        "--cold", action="store_true", help="force a full garbage collection (cold CPU caches) before every sample"
    )
    args = parser.parse_args()
    global COLD, REF_CAP, perf
    COLD = args.cold
    REF_CAP = args.ref_cap
    if args.cpu:
        perf = time.process_time
    repeats = 5 if args.quick else 15
    workloads = [load_workload(name) for name in WORKLOADS]
    if args.tail_size:
        hold_sizes = sorted({max(args.tail_size // 100, 1_000), max(args.tail_size // 10, 1_000), args.tail_size})
    else:
        hold_sizes = [100_000, 1_000_000] if args.quick else [100_000, 1_000_000, 4_000_000]
    runtime = "compiled runtime" if respc.COMPILED_RUNTIME else "pure-Python runtime"
    print(f"respc {respc.__version__} ({runtime}); "
          f"reference: {'transformers ' + transformers_version if RefParser else 'not installed'}; "
          f"Python {sys.version.split()[0]}; medians of {repeats} interleaved runs (ratios: of the runs' ratios)"
          f"{' (cold: full garbage collection before every sample)' if COLD else ''}"
          f"{'; CPU time' if args.cpu else ''}\n")
    sections = {
        # a round of a workload takes milliseconds: three times the rounds, for steadier ratios
        "streaming": lambda: bench_streaming(workloads, repeats * 3),
        "flat": lambda: bench_flatness(
            [10_000, 100_000, 400_000] + ([] if args.quick else [1_600_000]), 1_600_000, repeats
        ),
        "held": lambda: bench_held_regex(200_000, 20_000, 3),
        "holds": lambda: bench_long_holds(hold_sizes, [10_000, 20_000]),
        "tail": lambda: bench_long_holds(
            hold_sizes, [1_000, 4_000], TAILS,
            "Text after the end of turn, 4-character chunks: held to finalize unscanned (flat cost per chunk)",
        ),
        "linear": lambda: bench_linear(
            args.families.split(",") if args.families else sorted(p.stem for p in (ROOT / "templates" / "samples").glob("*.json")),
            args.run or (1_000 if args.quick else 4_000), args.calls or (50 if args.quick else 500),
            RefParser is not None, 1 if args.quick else 3,
        ),
        "serving": lambda: bench_serving(workloads, repeats * 3),
        "oneshot": lambda: bench_one_shot(workloads, repeats),
        "memory": lambda: bench_memory(2_000_000 if args.quick else 10_000_000),
        "compile": lambda: bench_compile(workloads, 7 if args.quick else 21),
    }
    for name, run in sections.items():
        if args.only and name != args.only:
            continue
        print(run())
        print(flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
