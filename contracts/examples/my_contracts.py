"""A user contract file, as the README shows it: load it with `--contracts contracts/examples/my_contracts.py`."""

from contracts import Verdict, contract


@contract(stage="after_execution", severity="warn", cost=0.1, max_vars=200, max_seconds=5.0)
def small_and_fast(sample, max_vars: int, max_seconds: float) -> Verdict:
    """Keep training data small and quick to solve: few variables, short solve time."""
    solve = sample.execution.final_solve if sample.execution else None
    if solve is None:
        return Verdict.skipped("no solve call")
    problems = []
    if solve.n_vars > max_vars:
        problems.append(f"{solve.n_vars} variables > {max_vars}")
    if solve.solve_time_s > max_seconds:
        problems.append(f"solved in {solve.solve_time_s:.1f}s > {max_seconds}s")
    if problems:
        return Verdict.failed("; ".join(problems), n_vars=solve.n_vars, solve_time_s=solve.solve_time_s)
    return Verdict.passed("small and fast", n_vars=solve.n_vars, solve_time_s=solve.solve_time_s)
