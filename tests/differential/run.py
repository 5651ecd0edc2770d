"""Standalone runner for the respc differential suite.

python tests/differential/run.py --cases 100000 --seed 7
python tests/differential/run.py --seed 7 --group 123 -v          # reproduce one template group
python tests/differential/run.py --seed 7 --group 123 --minimize  # shrink its mismatches
python tests/differential/run.py --cases 5000 --ref-only --stats  # generator sanity check (no respc)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import os  # noqa: E402

# compile in memory only (no respc disk cache) unless the caller chose a cache dir
os.environ.setdefault("RESPC_CACHE_DIR", "")

import gen  # noqa: E402
import harness  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=20000, help="minimum number of cases to run")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--group", type=int, default=None, help="run only this template group")
    ap.add_argument("--start-group", type=int, default=0)
    ap.add_argument("--inputs-per-group", type=int, default=8)
    ap.add_argument("--ref-only", action="store_true", help="run only the reference (generator sanity check)")
    ap.add_argument("--stats", action="store_true", help="print generator distribution statistics")
    ap.add_argument("--minimize", action="store_true", help="minimize each distinct mismatch found")
    ap.add_argument("--max-print", type=int, default=10, help="how many failures to print in full")
    ap.add_argument("--json-out", type=str, default=None, help="write all kept failures as JSON to this file")
    ap.add_argument("--progress", action="store_true", help="print progress and slow groups")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every failure as it happens")
    args = ap.parse_args(argv)

    respc_mod = None
    if not args.ref_only:
        try:
            import respc as respc_mod  # type: ignore[no-redef]
        except Exception as e:  # pragma: no cover
            print(f"cannot import respc ({type(e).__name__}: {e}); use --ref-only", file=sys.stderr)
            return 2

    if args.stats:
        print_generator_stats(args.seed, min(args.cases, 3000) // 20 + 1, args.inputs_per_group)

    stats = harness.run(
        args.seed,
        args.cases,
        respc_mod=respc_mod,
        inputs_per_group=args.inputs_per_group,
        start_group=args.start_group,
        only_group=args.group,
        ref_only=args.ref_only,
        verbose=args.verbose,
        progress=args.progress,
    )
    print(stats.summary())
    if not args.verbose:
        for rec in stats.failures[: args.max_print]:
            print(
                harness.format_failure(rec)
                if "template" in rec and "reference" in rec
                else json.dumps(rec, ensure_ascii=False, default=repr)
            )
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(stats.failures, ensure_ascii=False, indent=1, default=repr))
    if args.minimize and stats.failures:
        import minimize

        seen: set = set()
        done_inputs: set = set()
        for rec in stats.failures:
            if "reference" not in rec:
                continue
            if (rec["group"], rec["input"]) in done_inputs:
                continue  # other chunkings of the same input: almost always the same bug
            done_inputs.add((rec["group"], rec["input"]))
            small = minimize.minimize(rec, respc_mod)
            sig = (small["kind"], json.dumps(small["template"], sort_keys=True, default=repr))
            if sig in seen:
                continue
            seen.add(sig)
            print(minimize.format_min(small))
    return 1 if stats.mismatches else 0


def print_generator_stats(seed: int, ngroups: int, ipg: int) -> None:
    c: Counter = Counter()
    for g in range(ngroups):
        grp = gen.gen_group(seed, g, ipg)
        t = grp.template
        c["groups"] += 1
        if grp.invalid_kind:
            c["invalid"] += 1
            c["invalid:" + grp.invalid_kind] += 1
            continue
        fields = t["fields"]
        c[f"nfields={len(fields)}"] += 1
        impl = [n for n, f in fields.items() if "open" not in f and "open_pattern" not in f]
        c[f"implicit={len(impl)}"] += 1
        for f in fields.values():
            c["content=" + f.get("content", "text")] += 1
            for k in (
                "open",
                "open_pattern",
                "close",
                "close_pattern",
                "transform",
                "transform_each",
                "repeats",
                "join",
                "optional",
            ):
                if k in f:
                    c["key:" + k] += 1
            if isinstance(f.get("open"), list):
                c["open:list"] += 1
            for k in ("open_pattern", "close_pattern"):
                p = f.get(k)
                if isinstance(p, str) and ("?P<" in p):
                    c["named-groups"] += 1
                if p in ("$", r"\Z", "^") or (
                    isinstance(p, str)
                    and (p.startswith("(?=") or p.startswith("(?<=") or p.startswith("(?:^|"))
                ):
                    c["zero-width:" + k] += 1
        c[
            "anchor:"
            + (
                "literal"
                if isinstance(t.get("start_anchor"), str)
                else "list" if "start_anchor" in t else "pattern"
            )
        ] += 1
        for inp in grp.inputs:
            c["inputs"] += 1
            c["tools"] += inp.tools is not None
            c["prefix-empty"] += inp.prefix == ""
            c["prefix-none"] += inp.prefix is None
    print("generator stats:", json.dumps(dict(sorted(c.items())), ensure_ascii=False))


if __name__ == "__main__":
    sys.exit(main())
