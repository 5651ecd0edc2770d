"""Greedy shrinking of a differential mismatch (used by ``run.py --minimize``).

Takes a failure record from ``harness`` and repeatedly tries smaller variants -- fewer/merged
chunks, shorter text and prefix, fewer tools, a template with fewer fields/keys -- keeping a variant
whenever respc and the reference still disagree on it.
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import gen
import harness


def _run(template: Any, prefix: str | None, chunks: list[str], tools: Any, oneshot: bool, respc_mod: Any):
    budget = 4 * (len(prefix or "") + sum(map(len, chunks))) + 64
    text = "".join(chunks)
    tec = getattr(respc_mod, "TemplateError", None)
    if oneshot:
        ref = harness.run_oneshot(
            lambda: harness.ref_parse_response(
                text, template, prefix=prefix, tools=gen.materialize_tools(tools)
            ),
            harness.REF_TIMEOUT,
        )
        got = harness.run_oneshot(
            lambda: respc_mod.parse_response(
                text, template, prefix=prefix, tools=gen.materialize_tools(tools)
            ),
            harness.RESPC_TIMEOUT,
            tec,
        )
    else:
        ref = harness.run_stream(
            lambda: harness.GuardedRefParser(
                template, prefix, tools=gen.materialize_tools(tools), budget=budget
            ),
            chunks,
            harness.REF_TIMEOUT,
        )
        got = harness.run_stream(
            lambda: respc_mod.ResponseParser(template, prefix, tools=gen.materialize_tools(tools)),
            chunks,
            harness.RESPC_TIMEOUT,
            tec,
        )
    return ref, got


class _Case:
    def __init__(self, rec: dict, respc_mod: Any):
        self.respc = respc_mod
        self.template = copy.deepcopy(rec["template"])
        self.prefix = rec["prefix"]
        self.tools = copy.deepcopy(rec["tools"])
        self.oneshot = rec["chunking"] in ("parse_response", "batch")
        chunks = list(rec["chunks"])
        if rec["chunking"] == "batch":
            chunks = [next((t for t in chunks if self._fails_with(text_chunks=[t], oneshot=True)), chunks[0])]
        self.chunks = chunks
        self.construct_failure = (
            rec["kind"].startswith("error@construct") or rec["kind"] == "not-TemplateError"
        )
        self.hang = "timeout" in rec.get("detail", "")
        self.last: tuple | None = None
        self.deadline: float | None = None

    def _fails_with(self, *, template=None, prefix=..., text_chunks=None, tools=..., oneshot=None) -> bool:
        if self.deadline is not None and time.monotonic() > self.deadline:
            return False  # out of time: keep what we have
        template = self.template if template is None else template
        prefix = self.prefix if prefix is ... else prefix
        chunks = self.chunks if text_chunks is None else text_chunks
        tools = self.tools if tools is ... else tools
        oneshot = self.oneshot if oneshot is None else oneshot
        try:
            rejects = False
            harness.ref_load(copy.deepcopy(template))
        except Exception:
            rejects = True
        ref, got = _run(template, prefix, chunks, tools, oneshot, self.respc)
        if ref.error in ("diverged", "timeout"):
            return False
        diff = harness.compare(ref, got, rejects and prefix is not None)
        if diff is None:
            return False
        if not self.construct_failure and got.error_step in ("construct",) and ref.error_step != "construct":
            return False  # wandered into a template respc rejects: not the same bug
        if (got.error == "timeout") != self.hang:
            return False  # a hang and a wrong answer are different bugs: keep the original one
        self.last = (diff, ref, got)
        return True

    # -- shrinking passes ------------------------------------------------------------------------
    def shrink_chunks(self) -> bool:
        changed = False
        if len(self.chunks) > 1 and self._fails_with(text_chunks=["".join(self.chunks)]):
            self.chunks = ["".join(self.chunks)]
            changed = True
        # remove blocks of chunks, halving the block size
        size = max(1, len(self.chunks) // 2)
        while size >= 1 and len(self.chunks) > 1:
            i = 0
            while i < len(self.chunks) and len(self.chunks) > 1:
                trial = self.chunks[:i] + self.chunks[i + size :]
                if trial and self._fails_with(text_chunks=trial):
                    self.chunks = trial
                    changed = True
                else:
                    i += size
            size //= 2
        # merge neighbours
        i = 0
        while i + 1 < len(self.chunks):
            trial = self.chunks[:i] + [self.chunks[i] + self.chunks[i + 1]] + self.chunks[i + 2 :]
            if self._fails_with(text_chunks=trial):
                self.chunks = trial
                changed = True
            else:
                i += 1
        # characters
        for ci in range(len(self.chunks)):
            changed |= self._shrink_str(
                lambda: self.chunks[ci],
                lambda s: self.chunks[:ci] + [s] + self.chunks[ci + 1 :],
                lambda v: self._fails_with(text_chunks=v),
                lambda v: setattr(self, "chunks", v),
            )
        return changed

    def shrink_prefix(self) -> bool:
        if self.prefix is None or self.prefix == "":
            return False
        if self._fails_with(prefix=""):
            self.prefix = ""
            return True
        return self._shrink_str(
            lambda: self.prefix,
            lambda s: s,
            lambda v: self._fails_with(prefix=v),
            lambda v: setattr(self, "prefix", v),
        )

    @staticmethod
    def _shrink_str(get, build, fails, commit) -> bool:
        changed = False
        # block removal, halving block size
        s = get()
        size = max(1, len(s) // 2)
        while size >= 1:
            i = 0
            while i < len(get()):
                s = get()
                cand = s[:i] + s[i + size :]
                v = build(cand)
                if fails(v):
                    commit(v)
                    changed = True
                else:
                    i += size
            size //= 2
        return changed

    def shrink_tools(self) -> bool:
        if self.tools is None:
            return False
        if self._fails_with(tools=None):
            self.tools = None
            return True
        changed = False
        i = 0
        while i < len(self.tools):
            trial = self.tools[:i] + self.tools[i + 1 :]
            if self._fails_with(tools=trial):
                self.tools = trial
                changed = True
            else:
                i += 1
        return changed

    def shrink_template(self) -> bool:
        t = self.template
        if not isinstance(t, dict) or not isinstance(t.get("fields"), dict):
            return False
        changed = False
        progress = True
        while progress:
            progress = False
            for cand in self._template_candidates(self.template):
                if self._fails_with(template=cand):
                    self.template = cand
                    changed = progress = True
                    break  # restart from the smaller template
        return changed

    def _template_candidates(self, t: dict):
        fields = t["fields"]
        for name in list(fields):
            if len(fields) > 1:
                c = copy.deepcopy(t)
                del c["fields"][name]
                yield c
        if t.get("defaults"):
            c = copy.deepcopy(t)
            del c["defaults"]
            yield c
        if "version" in t:
            c = copy.deepcopy(t)
            del c["version"]
            yield c
        if isinstance(t.get("start_anchor"), list):
            c = copy.deepcopy(t)
            c["start_anchor"] = t["start_anchor"][0]
            yield c
        for name in list(fields):
            spec = fields[name]
            if not isinstance(spec, dict):
                continue
            if "content" in spec or "content_args" in spec:
                c = copy.deepcopy(t)
                if name in c["fields"]:
                    c["fields"][name].pop("content", None)
                    c["fields"][name].pop("content_args", None)
                    yield c
            for key in (
                "join",
                "optional",
                "transform_each",
                "repeats",
                "content_args",
                "transform",
                "content",
            ):
                if key in spec:
                    c = copy.deepcopy(t)
                    if name in c["fields"]:
                        del c["fields"][name][key]
                        yield c
            for key in ("open", "close"):
                if isinstance(spec.get(key), list) and len(spec[key]) > 1:
                    for i in range(len(spec[key])):
                        c = copy.deepcopy(t)
                        if name in c["fields"]:
                            lst = c["fields"][name][key]
                            c["fields"][name][key] = lst[:i] + lst[i + 1 :]
                            yield c
            for key in ("close", "close_pattern"):
                if key in spec:
                    c = copy.deepcopy(t)
                    if name in c["fields"]:
                        del c["fields"][name][key]
                        yield c
            if isinstance(spec.get("transform"), (dict, list)):
                c = copy.deepcopy(t)
                if name in c["fields"]:
                    c["fields"][name]["transform"] = "{content}"
                    yield c
            ca = spec.get("content_args")
            if isinstance(ca, dict):
                for key in list(ca):
                    if key == "tag_pattern":
                        continue
                    c = copy.deepcopy(t)
                    if name in c["fields"]:
                        del c["fields"][name]["content_args"][key]
                        yield c


def minimize(rec: dict, respc_mod: Any, rounds: int = 4, budget: float = 90.0) -> dict:
    # a hang is what we may be shrinking: give respc less time per attempt while minimizing
    saved = harness.RESPC_TIMEOUT
    harness.RESPC_TIMEOUT = min(saved, 1.0)
    try:
        return _minimize(rec, respc_mod, rounds, budget)
    finally:
        harness.RESPC_TIMEOUT = saved


def _minimize(rec: dict, respc_mod: Any, rounds: int, budget: float) -> dict:
    case = _Case(rec, respc_mod)
    if not case._fails_with():
        out = dict(rec)
        out["minimized"] = False
        return out
    case.deadline = time.monotonic() + budget
    for _ in range(rounds):
        changed = False
        changed |= case.shrink_template()
        changed |= case.shrink_tools()
        changed |= case.shrink_prefix()
        changed |= case.shrink_chunks()
        if not changed:
            break
    case.deadline = None
    case._fails_with()
    diff, ref, got = case.last
    return {
        "minimized": True,
        "seed": rec["seed"],
        "group": rec["group"],
        "kind": diff[0],
        "detail": diff[1],
        "mode": "parse_response" if case.oneshot else "stream",
        "template": case.template,
        "prefix": case.prefix,
        "chunks": case.chunks,
        "tools": case.tools,
        "reference": harness._trace_dump(ref),
        "respc": harness._trace_dump(got),
    }


def format_min(m: dict) -> str:
    if not m.get("minimized"):
        # the case no longer fails when rerun alone (or fails at construction): shown as recorded
        return f"=== not minimized ({m.get('kind')}): the recorded case is shown above\n"
    lines = [
        f"=== minimized mismatch ({m['kind']}) from seed={m['seed']} group={m['group']}: {m['detail']}",
        f"template = {json.dumps(m['template'], ensure_ascii=False)}",
        f"prefix   = {m['prefix']!r}",
        f"chunks   = {m['chunks']!r}   ({m['mode']})",
    ]
    if m.get("tools") is not None:
        lines.append(f"tools    = {json.dumps(m['tools'], ensure_ascii=False)}")
    lines.append(f"reference: {json.dumps(m['reference'], ensure_ascii=False)}")
    lines.append(f"respc:     {json.dumps(m['respc'], ensure_ascii=False)}")
    return "\n".join(lines) + "\n"
