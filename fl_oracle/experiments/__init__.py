"""The experiments layer: one training loop (:mod:`.loop`) and the drivers built on it — the
measuring oracle run, the demo with its reports. It imports the simulator, never the CLI."""
