"""The respc version: part of every template hash, so a new version recompiles."""

__version__ = "0.1.0"
