"""Build time of compiled.grammar() per bundled family, beside llguidance's compile time.

    python bench/grammar.py            # every family, 5 rounds
    python bench/grammar.py --rounds 3 qwen3 gpt-oss
    python bench/grammar.py --first 3  # and the first build in 3 fresh processes per family

For each family (with its samples' tools): the Lark grammar's size, the median time to
build it cold (every grammar cache cleared: the IR, the delimiters parsed and translated,
the state walk), warm (the template seen, a tool list not seen before that differs from
the last only in a description), new names (the template seen, every tool renamed: what a
new request's tools cost when the names are new), and cached (the same template, tools and
options again: a dict lookup), and the median time llguidance takes to compile it (an
LLMatcher over a byte vocabulary), with the ratio of the cold build to that compile.
Medians over interleaved rounds. Builds are timed in CPU time of the process (on a shared
machine wall time mostly measures the other jobs; ``--wall`` for wall time), llguidance's
compile in wall time (it may use threads). ``--first N``: the first build in a fresh
process (after ``respc.load``; regex's own cache then holds only what loading the module
compiled), median of N processes. ``--checks``: also the checks of tests/test_grammar.py per
family (needs llguidance, jsonschema): samples accepted / checked (each whole sample with and
without the end-of-turn token, and the cut ones; the schema-breaking ones, rejected on
purpose, counted apart), mutations rejected / tried, random walks parsed / ended (24 tried).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import respc  # noqa: E402
from respc.compiler import grammar as G  # noqa: E402


def _tokenizer():
    import llguidance as llg

    class Bytes:
        tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
        eos_token_id = 256
        bos_token_id = None
        special_token_ids = [256]

        def __call__(self, text):
            return list(text.encode() if isinstance(text, str) else text)

    return llg, llg.LLTokenizer(llg.TokenizerWrapper(Bytes()))


def _clear() -> None:
    """Every cache of the grammar builder (the bundled module stays loaded)."""
    G._CACHE.clear()
    G._PARTS.clear()
    G._IRS.clear()
    for name in dir(G):
        clear = getattr(getattr(G, name), "cache_clear", None)
        if clear is not None:
            clear()


_FIRST = """
import json, sys, time
sys.path.insert(0, {root!r})
import respc
compiled = respc.load({family!r})
tools = json.loads(open({tools!r}).read())["tools"]
t = time.{clock}()
compiled.grammar(tools)
print(time.{clock}() - t)
"""


def _first(family: str, samples: Path, runs: int, clock: str) -> float:
    """Median seconds of the first grammar built in a fresh process (the module loaded)."""
    code = _FIRST.format(root=str(ROOT), family=family, tools=str(samples / f"{family}.json"), clock=clock)
    times = [float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)
             for _ in range(runs)]
    return statistics.median(times)


def _checks(family: str) -> str:
    """The grammar tests' counts for a family (see --checks)."""
    from tests import test_grammar as T

    counts: list = []
    T._check_samples(family, counts=counts)
    breaking = {name for fam, name in T.SCHEMA_BREAKING if fam == family}
    kept = [ok for name, ok in counts if name not in breaking]
    rejected = sum(not ok for name, ok in counts if name in breaking)
    failures, tried = T.mutation_results(family)
    _, parsed, ended = T.walk_results(family, T.walk_prefix(family))
    return (f" {f'{sum(kept)}/{len(kept)}':>9} {f'{rejected}/{len(counts) - len(kept)}':>6}"
            f" {f'{tried - len(failures)}/{tried}':>9} {f'{parsed}/{ended}':>7}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("families", nargs="*")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--first", type=int, default=0, metavar="N", help="also time the first build in N fresh processes")
    ap.add_argument("--wall", action="store_true", help="time the builds in wall time (default: CPU time)")
    ap.add_argument("--checks", action="store_true", help="also count samples accepted, mutations rejected, walks parsed")
    args = ap.parse_args(argv)
    samples = ROOT / "templates" / "samples"
    families = args.families or sorted(p.stem for p in samples.glob("*.json"))
    clock = time.perf_counter if args.wall else time.process_time
    try:
        llg, tok = _tokenizer()
    except ImportError:
        llg = tok = None
    print(f"{'family':28} {'size':>8} {'cold ms':>8} {'warm ms':>8} {'names ms':>8} {'cached us':>9} {'llg ms':>8} {'cold/llg':>8}"
          + (f" {'first ms':>8}" if args.first else "")
          + (f" {'samples':>9} {'schema':>6} {'mutations':>9} {'walks':>7}" if args.checks else ""))
    for family in families:
        compiled = respc.load(family)
        tools = json.loads((samples / f"{family}.json").read_text())["tools"]
        cold, warm, names, hit, comp = [], [], [], [], []
        size = "-"
        try:
            for r in range(args.rounds):
                _clear()
                t = clock()
                grammar = compiled.grammar(tools)
                cold.append(clock() - t)
                renamed = json.loads(json.dumps(tools))
                renamed[0]["function"]["description"] = f"round {r}"  # a tool list not seen before
                t = clock()
                compiled.grammar(renamed)
                warm.append(clock() - t)
                for tool in renamed:
                    tool.get("function", tool)["name"] += f"_r{r}"  # every name new
                t = clock()
                compiled.grammar(renamed)
                names.append(clock() - t)
                t = clock()
                compiled.grammar(tools)
                hit.append(clock() - t)
                if llg is not None:
                    t = time.perf_counter()
                    matcher = llg.LLMatcher(tok, grammar, log_level=0)
                    comp.append(time.perf_counter() - t)
                    assert not matcher.is_error(), matcher.get_error()
            size = len(grammar)
        except G.GrammarUnsupported as error:
            print(f"{family:28} {'refused: ' + str(error)[:80]}")
            continue
        med = statistics.median
        llg_ms = med(comp) * 1e3 if comp else float("nan")
        first = f" {_first(family, samples, args.first, clock.__name__) * 1e3:>8.1f}" if args.first else ""
        print(f"{family:28} {size:>8} {med(cold) * 1e3:>8.1f} {med(warm) * 1e3:>8.1f} {med(names) * 1e3:>8.1f} "
              f"{med(hit) * 1e6:>9.1f} {llg_ms:>8.1f} {med(cold) * 1e3 / llg_ms if comp else float('nan'):>8.1f}{first}"
              + (_checks(family) if args.checks else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
