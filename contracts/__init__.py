"""The contract engine: Python-authored checks, answer-blind repairs, structural equivalence, CoT.

Author a contract::

    from contracts import Verdict, contract

    @contract(stage="after_execution", severity="warn", cost=0.1, max_vars=500)
    def small_model(sample, max_vars):
        solve = sample.execution.final_solve
        if solve is None:
            return Verdict.skipped("no solve call")
        ok = solve.n_vars <= max_vars
        return Verdict.passed() if ok else Verdict.failed(f"{solve.n_vars} variables", n_vars=solve.n_vars)
"""

from contracts.api import Contract, Outcome, Repair, Severity, Stage, Verdict, contract, contract_names, get_contract
from contracts.sample import BlindProblem, BlindSample, Sample
from contracts.verdicts import DisputeRow, RepairRecord, VerdictRow, verdict_dicts

__all__ = [
    "BlindProblem", "BlindSample", "Contract", "DisputeRow", "Outcome", "Repair", "RepairRecord", "Sample",
    "Severity", "Stage", "Verdict", "VerdictRow", "contract", "contract_names", "get_contract", "verdict_dicts",
]
