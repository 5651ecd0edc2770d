"""Check the bundled bench samples against the behavioural reference (transformers' chat_parsing).

For every sample ``<name>.txt`` (with ``<name>.prefix.txt`` and ``<name>.tools.json``) and the
bundled template ``templates/<name>.json`` this script:

1. loads the template with the reference loader;
2. parses sample + prefix + tools in one shot with ``parse_response`` and prints the message;
3. checks the message has what a user expects: ``reasoning_content``, ``content`` iff the sample
   has user-visible content, exactly the expected tool calls (names, in order) with arguments that
   match the tool's JSON schema types, and no leftover format markers in the text fields;
4. streams the same text through ``ResponseParser`` N characters at a time (default 4) and checks
   the final message equals the one-shot result.

It also checks the README example in ``examples/``. Exits non-zero if anything fails.

Usage: python bench/samples/check_samples.py [--chunk 4 [--chunk 1 ...]] [--full]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import regex as re

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # silence the "PyTorch was not found" banner

from transformers.utils.chat_parsing import ResponseParser, parse_response  # noqa: E402
from transformers.utils.chat_parsing.response_templates import load_response_template  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "bench" / "samples"
TEMPLATES = ROOT / "templates"
EXAMPLES = ROOT / "examples"

# What each sample must parse to. `content` is False where the model format does not put
# user-visible text in the same turn as tool calls (Command-A: a turn is either an action or a
# response, never both); `reasoning` is False where the model has no reasoning block
# (Qwen3-Coder); `ids` is True where the format writes call ids (Command-A's tool_call_id).
# gpt-oss makes one call per reply: <|call|> stops the generation.
EXPECT = {
    "qwen3": {"content": True, "tools": ["get_shipment_status", "quote_shipping_rates", "schedule_pickup"]},
    "qwen3-coder": {"content": True, "reasoning": False, "tools": ["run_sql", "search_incidents"]},
    "gpt-oss": {"content": True, "tools": ["search_flights"]},
    "command-a": {"content": False, "ids": True, "tools": ["search_knowledge_base", "create_ticket"]},
}

# (label, template, output file, prefix file, tools file or None, expectations)
EXAMPLE_CASES = [
    ("examples/qwen3", "qwen3", EXAMPLES / "qwen3_output.txt", EXAMPLES / "qwen3_prefix.txt", None,
     {"content": True, "tools": ["get_weather"]}),
]

# Special tokens / tags that must never leak into reasoning_content or content.
LEFTOVER = re.compile(r"<\|[^<>|\s]+\|>|</?think>|</?tool_call>|</?function[=>]|</?parameter[=>]|to=functions\.")

JSON_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
}


def _read(path: Path) -> str:
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def _type_ok(value, schema: dict) -> bool:
    declared = schema.get("type")
    if declared is None:
        return True
    types = [declared] if isinstance(declared, str) else list(declared)
    if not any(JSON_TYPES.get(t, lambda v: True)(value) for t in types):
        return False
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        return all(_type_ok(v, schema["properties"][k]) for k, v in value.items() if k in schema["properties"])
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return all(_type_ok(v, schema["items"]) for v in value)
    return True


def check_message(msg: dict, expect: dict, tools: list[dict] | None) -> list[str]:
    errors: list[str] = []
    if msg.get("role") != "assistant":
        errors.append(f"role is {msg.get('role')!r}, expected 'assistant'")

    reasoning = msg.get("reasoning_content")
    if expect.get("reasoning", True):
        if not isinstance(reasoning, str) or not reasoning.strip():
            errors.append("missing or empty reasoning_content")
    elif reasoning is not None:
        errors.append(f"unexpected reasoning_content {reasoning!r} (the model has no reasoning block)")

    content = msg.get("content")
    if expect["content"]:
        if not isinstance(content, str) or not content.strip():
            errors.append("missing or empty content (the sample has user-visible content)")
    elif content not in (None, ""):
        errors.append(f"unexpected content {content!r}")

    for field in ("reasoning_content", "content"):
        text = msg.get(field)
        if isinstance(text, str) and (m := LEFTOVER.search(text)):
            errors.append(f"{field} contains leftover marker {m.group(0)!r}")
        if isinstance(text, str) and text != text.strip():
            errors.append(f"{field} has surrounding whitespace")

    schemas = {}
    for tool in tools or []:
        fn = tool.get("function", tool)
        schemas[fn["name"]] = fn.get("parameters", {})

    calls = msg.get("tool_calls")
    if not isinstance(calls, list):
        errors.append("missing tool_calls" if calls is None else f"tool_calls is not a list: {type(calls).__name__}")
        return errors
    if len(calls) != len(expect["tools"]):
        errors.append(f"expected {len(expect['tools'])} tool calls, got {len(calls)}")
    for i, call in enumerate(calls):
        where = f"tool_calls[{i}]"
        keys = {"id", "type", "function"} if expect.get("ids") else {"type", "function"}
        if not isinstance(call, dict) or call.get("type") != "function" or set(call) != keys:
            errors.append(f"{where} is not {{{', '.join(repr(k) for k in sorted(keys))}}} with type 'function': {call!r}")
            continue
        if expect.get("ids") and not (isinstance(call["id"], str) and call["id"]):
            errors.append(f"{where} id is not a non-empty str: {call['id']!r}")
        fn = call["function"]
        if not isinstance(fn, dict) or set(fn) != {"name", "arguments"}:
            errors.append(f"{where}.function must have exactly name and arguments: {fn!r}")
            continue
        if i < len(expect["tools"]) and fn["name"] != expect["tools"][i]:
            errors.append(f"{where} name {fn['name']!r}, expected {expect['tools'][i]!r}")
        args = fn["arguments"]
        if not isinstance(args, dict) or not args:
            errors.append(f"{where} arguments are not a non-empty dict: {args!r}")
            continue
        for key, value in args.items():
            if LEFTOVER.search(key) or (isinstance(value, str) and LEFTOVER.search(value)):
                errors.append(f"{where} argument {key!r} contains a leftover marker")
        if fn["name"] in schemas:
            params = schemas[fn["name"]]
            props = params.get("properties", {})
            for key in params.get("required", []):
                if key not in args:
                    errors.append(f"{where} missing required argument {key!r}")
            for key, value in args.items():
                if key not in props:
                    errors.append(f"{where} unexpected argument {key!r}")
                elif not _type_ok(value, props[key]):
                    errors.append(f"{where} argument {key!r}={value!r} does not match schema type "
                                  f"{props[key].get('type')!r}")
        elif tools is not None:
            errors.append(f"{where} calls unknown tool {fn['name']!r}")
    return errors


def stream(template, text: str, prefix: str, tools, chunk: int) -> tuple[dict, list[dict]]:
    parser = ResponseParser(template, prefix=prefix, tools=tools)
    events = list(parser.initial_events)
    for i in range(0, len(text), chunk):
        events.extend(parser.feed(text[i : i + chunk]))
    message, final_events = parser.finalize()
    return message, events + final_events


def _abbrev(value, width: int):
    if isinstance(value, str):
        return value if len(value) <= width else value[: width // 2] + " [...] " + value[-width // 2 :]
    if isinstance(value, dict):
        return {k: _abbrev(v, width) for k, v in value.items()}
    if isinstance(value, list):
        return [_abbrev(v, width) for v in value]
    return value


def run_case(label, template_name, out_path, prefix_path, tools_path, expect, chunks, full) -> bool:
    print(f"=== {label}  (template {template_name}.json, {out_path.stat().st_size} B output)")
    errors: list[str] = []
    try:
        template = load_response_template(json.loads(_read(TEMPLATES / f"{template_name}.json")))
    except Exception as e:  # noqa: BLE001
        print(f"  FAIL: template does not load in the reference: {e}")
        return False
    text, prefix = _read(out_path), _read(prefix_path)
    tools = json.loads(_read(tools_path)) if tools_path else None

    message = parse_response(text, template, prefix=prefix, tools=tools)
    print(json.dumps(message if full else _abbrev(message, 96), indent=2, ensure_ascii=False))
    errors += check_message(message, expect, tools)

    for chunk in chunks:
        streamed, events = stream(template, text, prefix, tools, chunk)
        if streamed != message:
            errors.append(f"streaming with {chunk}-char chunks gives a different message: {streamed!r}")
        closes = [e for e in events if e["type"] == "region_close"]
        opens = [e for e in events if e["type"] == "region_open"]
        if len(opens) != len(closes):
            errors.append(f"streaming ({chunk}-char chunks): {len(opens)} region_open vs {len(closes)} region_close")
        print(f"  stream/{chunk}: {len(events)} events, {len(closes)} regions closed, "
              f"{'same message' if streamed == message else 'DIFFERENT message'}")
    probe = ResponseParser(template, prefix=prefix, tools=tools)
    if probe.initial_events:
        print(f"  prefix pre-opened: {[e['field'] for e in probe.initial_events if e['type'] == 'region_open']}")

    for err in errors:
        print(f"  FAIL: {err}")
    print("  OK" if not errors else f"  {len(errors)} problem(s)")
    return not errors


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunk", type=int, action="append", help="streaming chunk size (repeatable; default 4)")
    ap.add_argument("--full", action="store_true", help="print messages without abbreviating long strings")
    args = ap.parse_args(argv)
    chunks = args.chunk or [4]

    ok = True
    for name, expect in EXPECT.items():
        ok &= run_case(name, name, SAMPLES / f"{name}.txt", SAMPLES / f"{name}.prefix.txt",
                       SAMPLES / f"{name}.tools.json", expect, chunks, args.full)
    for label, template_name, out_path, prefix_path, tools_path, expect in EXAMPLE_CASES:
        ok &= run_case(label, template_name, out_path, prefix_path, tools_path, expect, chunks, args.full)
    print("\nall samples OK" if ok else "\nSOME SAMPLES FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
