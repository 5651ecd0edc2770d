"""What generated parser modules import: content parsers, tool-argument typing,
transform helpers and the parser base; plus the module loader and cache."""
