"""CLI command modules: each defines register(app) and owns one noun."""
