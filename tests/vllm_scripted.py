"""A per-request logits processor for the vLLM serve test (tests/test_vllm_serve.py): a
request's ``vllm_xargs`` carry ``script``, the token ids the model must write, and at step i
only ``script[i]`` keeps a finite logit. The random-weight model then writes the scripted
sample token by token, through the engine's own sampler, detokenizer and parsers; a grammar
the request carries (a required or named tool call) masks the same logits, so a script the
grammar forbids fails the request."""

from __future__ import annotations

from vllm.v1.sample.logits_processor import AdapterLogitsProcessor


class ScriptedOutput(AdapterLogitsProcessor):
    @classmethod
    def validate_params(cls, params) -> None:
        script = (params.extra_args or {}).get("script")
        if script is not None and not (isinstance(script, list) and all(isinstance(t, int) for t in script)):
            raise ValueError("vllm_xargs.script: a list of token ids")

    def is_argmax_invariant(self) -> bool:
        return False  # it changes which token is the largest

    def new_req_logits_processor(self, params):
        script = (params.extra_args or {}).get("script")
        if not script:
            return None

        def force(output_ids, logits):
            keep = logits.new_full(logits.shape, float("-inf"))
            keep[script[min(len(output_ids), len(script) - 1)]] = 0.0
            return keep

        return force
