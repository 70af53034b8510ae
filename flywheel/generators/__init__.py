"""Verified OR problem generators: one module per family, registered by name."""
