"""The contract engine: Python-authored checks, answer-blind repairs, structural equivalence, CoT."""
