"""Test-only helpers (a scripted OpenAI-compatible server, question paraphrases): used by tests/ and bench/, never by the
product packages. Tests import them as ``support.X`` (pytest puts tests/ on sys.path); bench scripts as ``tests.support.X``."""
