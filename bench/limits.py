"""Hostile templates and outputs: compile time and memory against template size, and the
regex budget on a catastrophic stream (docs/performance.md, "Hostile templates").

    python bench/limits.py            # every case (a minute or two)
    python bench/limits.py --quick    # the smaller sizes only

Each case runs in a child process (``RESPC_CACHE_DIR=""``: nothing cached) with a time
limit, so a checkout without the limits shows "over Ns" instead of stalling the bench. A
compile case prints the seconds to a loaded parser (validation, IR, emission, import;
black is not run), or the error a template past the limits gets (README, "Limits"); and how far the compile raised the
process's peak resident memory above what it was once respc was imported. The stream case feeds
``(a|aa)+b``'s worst text one character at a time under the default bounds and prints how
long until ``RegexTimeout`` (or that it never came). Run it on two checkouts to compare
before / after.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

_CHILD = r"""
import json, resource, sys, time
case = json.loads(sys.argv[1])
import respc
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
kind, n = case["kind"], case["n"]
if kind == "stream":
    template = {"start_anchor": "<A>", "fields": {"content": {"content": "text"},
                "x": {"open_pattern": "(a|aa)+b", "close": "</x>", "content": "text"}}}
    parser = respc.compile_template(template).parser(prefix="")
    start = time.perf_counter()
    try:
        for ch in "a" * n:
            parser.feed(ch)
        parser.finalize()
        print(json.dumps({"seconds": time.perf_counter() - start, "result": "no RegexTimeout"}))
    except respc.RegexTimeout as error:
        print(json.dumps({"seconds": time.perf_counter() - start, "result": "RegexTimeout: " + str(error)[:60]}))
    sys.exit()
fields = {"content": {"content": "text"}}
if kind == "delimiter":
    fields["x"] = {"open": "<" + "ab" * (n // 2 - 1) + ">", "close": "</x>"}
elif kind == "alternatives":
    fields["x"] = {"open_pattern": "|".join(f"<t{i}>" for i in range(n)), "close": "</x>"}
else:
    fields.update({f"f{i}": {"open": f"<f{i}>", "close": f"</f{i}>"} for i in range(n - 1)})
template = {"start_anchor": "<A>", "fields": fields}
size = len(json.dumps(template))
start = time.perf_counter()
try:
    compiled = respc.compile_template(template)
    result = f"compiled, {len(compiled._source) / 1e3:.0f} KB of source"
except respc.TemplateError as error:
    result = "TemplateError: " + str(error)[:70]
seconds = time.perf_counter() - start
peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024  # (KiB on Linux)
print(json.dumps({"seconds": seconds, "peak_mb": peak / 1e6, "size": size, "result": result}))
"""

CASES = [
    ("delimiter", 1_000), ("delimiter", 4_096), ("delimiter", 10_000), ("delimiter", 100_000),
    ("alternatives", 100), ("alternatives", 600), ("alternatives", 1_000), ("alternatives", 5_000),
    ("fields", 32), ("fields", 128), ("fields", 300), ("fields", 3_000),
    ("stream", 30), ("stream", 224),
]
QUICK = {("delimiter", 1_000), ("delimiter", 4_096), ("alternatives", 100), ("alternatives", 600), ("fields", 32), ("fields", 128), ("stream", 30)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the smaller sizes only")
    ap.add_argument("--limit", type=float, default=120.0, help="seconds a case may take (default 120)")
    args = ap.parse_args()
    env = {**os.environ, "RESPC_CACHE_DIR": ""}
    print(f"{'case':<22} {'template':>10} {'seconds':>8} {'+RSS MB':>8}  result")
    for kind, n in CASES:
        if args.quick and (kind, n) not in QUICK:
            continue
        label = f"{kind} {n:,}"
        start = time.perf_counter()
        try:
            out = subprocess.run(
                [sys.executable, "-c", _CHILD, json.dumps({"kind": kind, "n": n})],
                capture_output=True, text=True, timeout=args.limit, env=env,
            )
        except subprocess.TimeoutExpired:
            print(f"{label:<22} {'':>10} {'>' + str(int(args.limit)):>8} {'':>8}  over {args.limit:.0f} s: stopped")
            continue
        if out.returncode != 0:
            last = (out.stderr.strip().splitlines() or ["?"])[-1]
            print(f"{label:<22} {'':>10} {time.perf_counter() - start:>8.2f} {'':>8}  failed: {last[:70]}")
            continue
        row = json.loads(out.stdout.strip().splitlines()[-1])
        size = f"{row['size'] / 1e3:.1f} KB" if "size" in row else ""
        peak = f"{row['peak_mb']:.1f}" if "peak_mb" in row else ""
        print(f"{label:<22} {size:>10} {row['seconds']:>8.2f} {peak:>8}  {row['result']}")


if __name__ == "__main__":
    main()
