"""or-flywheel: a solver-grounded data flywheel for OR modeling."""
