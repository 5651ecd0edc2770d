"""jinja2 code templates for the generated modules."""
