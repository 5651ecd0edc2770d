"""Serving-engine integrations: one module per engine, each importing its engine only there.

* :mod:`respc.integrations.vllm`: ``--tool-call-parser respc --reasoning-parser respc``
  (``register()``; also a ``vllm.general_plugins`` entry point: ``pip install respc[vllm]``);
* :mod:`respc.integrations.transformers`: ``install(tokenizer)`` runs a tokenizer's
  ``parse_response`` / ``get_response_parser`` on respc;
* :mod:`respc.integrations.sglang`: ``--tool-call-parser respc --reasoning-parser respc``
  (``register()``; also an ``sglang.srt.plugins`` entry point);

See docs/engines.md. Importing this package imports no engine.
"""
