"""Curation: dedup (exact, near-duplicate, structural), benchmark decontamination, and export to training shards."""
