"""Evaluation: zero-shot Pass@1 on OR benchmarks with stated tolerance rules, and re-scoring of existing outputs."""
