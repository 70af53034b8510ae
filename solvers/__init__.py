"""The solver layer: the model IR, renderers, ground-truth solving and the sandbox."""
