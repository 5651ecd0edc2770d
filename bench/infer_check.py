"""Check detect and infer on real chat templates (kept outside the repository).

    python bench/infer_check.py FOLDER MAPPING.json [--only NAME] [--no-infer] [--markdown]

FOLDER holds chat templates (``NAME.jinja``); MAPPING maps each file's stem to the bundled family
whose chat template it is. For each: ``respc.detect`` (right when it names that family, or a family
whose template is the same), then ``respc.infer`` (right when the inferred template parses every
one of the family's samples, templates/samples/FAMILY.json, to the message the bundled template
gives: the samples are outputs in the family's exact format), with the median time of each.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import respc  # noqa: E402
from respc.chat import detect as _detect  # noqa: E402
from respc.chat import probes as _probes  # noqa: E402


def timed(fn, repeat):
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return value, statistics.median(times)


def samples_agree(template, family: str) -> tuple[int, int, str]:
    """(cases parsed alike, cases, the first difference) between ``template`` and the bundled one."""
    data = _detect.samples(family) or {}
    bundled = respc.load(family)
    mine = respc.compile_template(template)
    same, total, first = 0, 0, ""
    for case in data.get("cases", []):
        if case.get("cut"):
            continue  # a cut output parses to raw partial text: a detail of each template
        total += 1
        tools = data.get("tools")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = _probes.normalize(bundled.parse(case["output"], prefix=case["prefix"], tools=tools))
            try:
                got = _probes.normalize(mine.parse(case["output"], prefix=case["prefix"], tools=tools))
            except Exception as exc:  # noqa: BLE001
                got = {"error": f"{type(exc).__name__}: {exc}"}
        for message in (want, got):
            for item in message.get("tool_calls", []):
                item.pop("id", None)  # ids: the inferred template reads them only where rendered
        if got == want:
            same += 1
        elif not first:
            first = f"{case['name']}: got {json.dumps(got)[:200]} want {json.dumps(want)[:200]}"
    return same, total, first


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("mapping")
    ap.add_argument("--only")
    ap.add_argument("--no-infer", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    mapping = json.load(open(args.mapping))
    rows = []
    for stem, family in sorted(mapping.items(), key=lambda kv: kv[1]):
        if args.only and args.only not in (stem, family):
            continue
        path = os.path.join(args.folder, stem + ".jinja")
        if not os.path.exists(path):
            rows.append((family, stem, "missing", "", "", "", "no copy of this chat template was at hand"))
            continue
        source = open(path, encoding="utf-8").read()
        kw = {"bos_token": "<s>", "eos_token": "</s>"}
        first = time.perf_counter()
        _detect.detect_report(source, **kw)  # the first call also compiles the jinja template
        t_first = time.perf_counter() - first
        report, t_detect = timed(lambda: _detect.detect_report(source, **kw), args.repeat)
        found = report.family
        same_template = found is not None and respc.load(found).hash == respc.load(family).hash
        detect_ok = found == family or same_template
        detect_cell = ("ok" if found == family else f"ok ({found}: same template)") if detect_ok else f"{found or 'none'}"
        infer_cell, t_infer, why = "", "", ""
        if not args.no_infer and hasattr(respc, "infer"):
            start = time.perf_counter()
            try:
                inferred, t = timed(lambda: respc.infer(source, **kw), 1)
                t_infer = f"{t * 1000:.0f}"
                same, total, first = samples_agree(inferred, family)
                infer_cell = "ok" if same == total else f"{same}/{total}"
                why = "" if same == total else first
            except respc.InferError as exc:
                infer_cell, why = "InferError", str(exc)
                t_infer = f"{(time.perf_counter() - start) * 1000:.0f}"
        if not detect_ok and not why:
            why = report.explain().replace("\n", " ")
        rows.append((family, stem, detect_cell, f"{t_first * 1000:.0f} / {t_detect * 1000:.0f}", infer_cell, t_infer, why))
    if args.markdown:
        print("| family | chat template | detect | detect ms (first / again) | infer | infer ms | note |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for row in rows:
            print("| " + " | ".join(str(c).replace("|", "\\|")[:160] for c in row) + " |")
    else:
        for row in rows:
            print("  ".join(str(c) for c in row[:6]), (row[6] if len(row) > 6 else "")[:300])
    det = sum(1 for r in rows if str(r[2]).startswith("ok"))
    inf = sum(1 for r in rows if len(r) > 4 and r[4] == "ok")
    print(f"\ndetect right: {det}/{len(rows)}; infer right: {inf}/{len(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
