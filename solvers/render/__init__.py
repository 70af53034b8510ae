"""Renderers: IR -> idiomatic program text per solver API, and IR -> five-element formulation text."""
