"""The ``respc`` command line.

    respc compile TEMPLATE.json [-o FILE] [--no-format]   print or write the generated module
    respc parse TEMPLATE [FILE|-] [--prefix-file F] [--tools-file F] [--stream] [--chunk-size N]
    respc build [--check] [--templates DIR] [--out DIR]   regenerate generated/ from templates/
    respc list                                            the bundled templates

TEMPLATE is a JSON file or the name of a bundled template (``respc list``).
User errors print one line on stderr and exit with status 2; no traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from . import COMPILED_RUNTIME
from ._version import __version__

EXIT_USAGE = 2
EXIT_STALE = 1


class UserError(Exception):
    """A problem with what the user asked for: reported as one line."""


def _template_arg(spec: str) -> Any:
    """A JSON file path, or the name of a bundled template."""
    from .api import bundled_templates, load
    from .compiler import load_template_file

    path = Path(spec)
    if path.exists() or spec.endswith(".json") or "/" in spec or "\\" in spec:
        return load_template_file(path)
    try:
        return load(spec)
    except KeyError:
        raise UserError(
            f"{spec}: no such template file, and no bundled template of that name "
            f"(bundled: {', '.join(bundled_templates())})"
        ) from None


def _read_text(spec: str | None, what: str) -> str:
    if spec is None or spec == "-":
        return sys.stdin.read()
    try:
        return Path(spec).read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{spec}: cannot read the {what} ({exc.strerror or exc})") from None


def _json_default(value: Any) -> Any:
    return repr(value)


def cmd_compile(args: argparse.Namespace) -> int:
    from .compiler import compile_source, load_template_file

    template = load_template_file(args.template)
    _, source = compile_source(template, format=not args.no_format)
    if args.output:
        Path(args.output).write_text(source, encoding="utf-8")
    else:
        sys.stdout.write(source)
    return 0


def cmd_parse(args: argparse.Namespace) -> int:
    from .api import compile_template

    compiled = compile_template(_template_arg(args.template))
    text = _read_text(args.input, "model output")
    prefix = _read_text(args.prefix_file, "prefix") if args.prefix_file else ""
    tools = None
    if args.tools_file:
        try:
            tools = json.loads(_read_text(args.tools_file, "tools file"))
        except json.JSONDecodeError as exc:
            raise UserError(f"{args.tools_file}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if not args.stream:
        message = compiled.parse(text, prefix=prefix, tools=tools)
        print(json.dumps(message, ensure_ascii=False, indent=2, default=_json_default))
        return 0
    if args.chunk_size < 1:
        raise UserError("--chunk-size must be at least 1")
    parser = compiled.parser(prefix=prefix, tools=tools)

    def emit(events: list[dict]) -> None:
        for event in events:
            print(json.dumps(event, ensure_ascii=False, default=_json_default))

    emit(parser.initial_events)
    step = args.chunk_size
    for start in range(0, len(text), step):
        emit(parser.feed(text[start : start + step]))
    message, final_events = parser.finalize()
    emit(final_events)
    print(json.dumps({"type": "message", "message": message}, ensure_ascii=False, default=_json_default))
    return 0


def _bundled_dirs(args: argparse.Namespace) -> tuple[Path, Path]:
    templates = Path(args.templates) if args.templates else Path(str(resources.files("respc.templates")))
    out = Path(args.out) if args.out else Path(str(resources.files("respc.generated")))
    return templates, out


def cmd_build(args: argparse.Namespace) -> int:
    from .api import _ident
    from .compiler import compile_source, load_template_file

    templates, out = _bundled_dirs(args)
    files = sorted(templates.glob("*.json"))
    if not files:
        raise UserError(f"{templates}: no template files (*.json) to build")
    stale = []
    expected = set()
    for path in files:
        target = out / f"{_ident(path.stem)}.py"
        expected.add(target.name)
        _, source = compile_source(load_template_file(path))
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current == source:
            continue
        stale.append(target)
        if not args.check:
            target.write_text(source, encoding="utf-8")
            print(f"wrote {target}")
    orphans = sorted(p for p in out.glob("*.py") if p.name != "__init__.py" and p.name not in expected)
    if args.check:
        for target in stale:
            print(f"stale: {target} (run `respc build`)", file=sys.stderr)
        for orphan in orphans:
            print(f"orphan: {orphan} has no template in {templates}", file=sys.stderr)
        if stale or orphans:
            return EXIT_STALE
        print(f"{len(files)} generated modules are fresh")
        return 0
    for orphan in orphans:
        orphan.unlink()
        print(f"removed {orphan} (no template)")
    print(f"{len(files)} templates, {len(stale)} module(s) regenerated")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from .api import bundled_templates

    for name in bundled_templates():
        print(name)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="respc", description="The response-template compiler.")
    runtime = "compiled" if COMPILED_RUNTIME else "pure-Python"
    parser.add_argument("--version", action="version", version=f"respc {__version__} ({runtime} runtime)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("compile", help="compile a template to its Python parser module")
    p.add_argument("template", help="template JSON file")
    p.add_argument("-o", "--output", help="write the module here instead of stdout")
    p.add_argument("--no-format", action="store_true", help="skip black formatting")
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser("parse", help="parse model output with a template; print the message as JSON")
    p.add_argument("template", help="template JSON file or bundled template name")
    p.add_argument("input", nargs="?", default="-", help="file with the model output ('-' or omitted: stdin)")
    p.add_argument("--prefix-file", help="file with the chat prompt before the generation (default: none)")
    p.add_argument("--tools-file", help="JSON file with the request's tools, to type tool-call arguments")
    p.add_argument("--stream", action="store_true", help="print the events as JSON lines, then the message")
    p.add_argument("--chunk-size", type=int, default=4, help="characters per feed with --stream (default 4)")
    p.set_defaults(func=cmd_parse)

    p = sub.add_parser("build", help="regenerate the bundled parser modules (generated/) from templates/")
    p.add_argument("--check", action="store_true", help="only check that they are fresh (exit 1 if not)")
    p.add_argument("--templates", help="template folder (default: the bundled templates)")
    p.add_argument("--out", help="output folder (default: the bundled generated modules)")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("list", help="list the bundled templates")
    p.set_defaults(func=cmd_list)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from .compiler import TemplateError

    try:
        return args.func(args)
    except (UserError, TemplateError) as exc:
        print(f"respc: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, KeyError, RuntimeError) as exc:
        # a parse failure on the given output (invalid JSON in a tool call, ...)
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"respc: error: {type(exc).__name__}: {message}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return 0
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"respc: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
