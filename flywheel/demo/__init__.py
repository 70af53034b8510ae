"""The flywheel end to end on CPU (issue 9): generators -> export -> tiny MoE (CPT, SFT) -> self-distillation rounds
through the ``hf:`` policy -> retrain -> Pass@1 on unseen seeds, plus the two ablations, as plots and a table.

``python -m flywheel.demo --size full`` (``make flywheel-demo``) or ``--size smoke`` (the test's toy size). Every
stage goes through the project's public CLI or API; the demo only orchestrates, measures and plots.
"""
