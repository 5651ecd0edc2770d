"""Parser modules generated from the bundled templates by `respc build`. Never edit by hand."""
