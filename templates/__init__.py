"""The bundled response templates (JSON), one per model family. `respc build` compiles them into respc.generated."""
