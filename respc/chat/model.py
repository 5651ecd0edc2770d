"""The response template of a model: ``respc.for_model(path_or_tokenizer)``.

A model folder (or its ``tokenizer_config.json``, or a tokenizer object) is read for, in order:
its ``response_template``; else the bundled family its chat template writes (``detect``); else a
template inferred from its chat template (``infer``). The chat template is taken from
``chat_template.jinja``, ``chat_template.json`` or ``tokenizer_config.json``'s ``chat_template``
(a named list's ``default`` entry), with ``bos_token`` and ``eos_token`` from the config.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass


@dataclass
class ModelTemplates:
    """What a model ships: its chat template (jinja text), response template, special tokens."""

    chat_template: str | None
    response_template: dict | None
    bos_token: str
    eos_token: str
    where: str


def _token(value) -> str:
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else ""


def _pick_chat_template(value) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # [{"name": "default", "template": ...}, {"name": "tool_use", ...}]
        named = {item.get("name"): item.get("template") for item in value if isinstance(item, dict)}
        return named.get("default") or named.get("tool_use") or next((t for t in named.values() if isinstance(t, str)), None)
    if isinstance(value, dict):
        return value.get("default") or value.get("tool_use") or next((t for t in value.values() if isinstance(t, str)), None)
    return None


def _read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc}); fix or remove the file") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a JSON object")
    return data


def read_model(source) -> ModelTemplates:
    """The templates and tokens of a model folder, a ``tokenizer_config.json``, a ``.jinja``
    chat template file, or a tokenizer object (``chat_template``, ``bos_token``...)."""
    if not isinstance(source, (str, os.PathLike)):
        chat = _pick_chat_template(getattr(source, "chat_template", None))
        response = getattr(source, "response_template", None) or getattr(source, "response_schema", None)
        init = getattr(source, "init_kwargs", None) or {}
        response = response or init.get("response_template") or init.get("response_schema")
        return ModelTemplates(
            chat,
            response if isinstance(response, dict) else None,
            _token(getattr(source, "bos_token", None)),
            _token(getattr(source, "eos_token", None)),
            type(source).__name__,
        )
    path = os.fspath(source)
    if os.path.isdir(path):
        config_path = os.path.join(path, "tokenizer_config.json")
        config = _read_json(config_path) if os.path.isfile(config_path) else {}
        chat = _pick_chat_template(config.get("chat_template"))
        jinja = os.path.join(path, "chat_template.jinja")
        if chat is None and os.path.isfile(jinja):
            chat = open(jinja, encoding="utf-8").read()
        chat_json = os.path.join(path, "chat_template.json")
        if chat is None and os.path.isfile(chat_json):
            chat = _pick_chat_template(_read_json(chat_json).get("chat_template"))
        response = config.get("response_template") or config.get("response_schema")
        return ModelTemplates(
            chat, response if isinstance(response, dict) else None, _token(config.get("bos_token")), _token(config.get("eos_token")), path
        )
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file or folder; pass a model folder, a tokenizer_config.json or a .jinja chat template")
    if path.endswith(".json"):
        config = _read_json(path)
        response = config.get("response_template") or config.get("response_schema")
        chat = _pick_chat_template(config.get("chat_template"))
        if chat is None and response is None:
            raise ValueError(f"{path}: holds neither chat_template nor response_template")
        return ModelTemplates(
            chat, response if isinstance(response, dict) else None, _token(config.get("bos_token")), _token(config.get("eos_token")), path
        )
    with open(path, encoding="utf-8") as handle:
        return ModelTemplates(handle.read(), None, "", "", path)


def for_model(path_or_tokenizer, *, report: list | None = None):
    """The CompiledTemplate for a model: its response_template if it ships one, else the bundled
    family its chat template writes, else a template inferred from the chat template (raises
    ``respc.InferError`` when none can be). ``report``, a list, gets one line saying which."""
    from ..api import compile_template, load
    from .detect import detect

    model = read_model(path_or_tokenizer)
    if model.response_template is not None:
        if report is not None:
            report.append(f"{model.where}: its response_template")
        return compile_template(model.response_template)
    if not model.chat_template:
        raise ValueError(
            f"{model.where}: no response_template and no chat_template; pass a model folder with a tokenizer_config.json "
            "or chat_template.jinja, or a bundled template name to respc.load()"
        )
    family = detect(model.chat_template, bos_token=model.bos_token, eos_token=model.eos_token)
    if family is not None:
        if report is not None:
            report.append(f"{model.where}: the bundled family {family!r} (detected from its chat template)")
        return load(family)
    try:
        from .infer import infer
    except ImportError:  # (an install without the inference engine)
        raise ValueError(f"{model.where}: no bundled family fits its chat template") from None
    template = infer(model.chat_template, bos_token=model.bos_token, eos_token=model.eos_token)
    if report is not None:
        report.append(f"{model.where}: a template inferred from its chat template")
    return compile_template(template)
