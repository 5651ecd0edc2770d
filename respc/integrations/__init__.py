"""respc inside serving engines: one module per engine, each importing its engine only there."""
