"""Reading chat templates: render them as transformers does (``render``), find the bundled family
whose format a chat template writes (``detect``), infer a response template from a chat template
alone (``infer``), and pick the template for a model folder or tokenizer (``model.for_model``)."""
