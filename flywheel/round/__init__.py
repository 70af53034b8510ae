"""A round: generate problems, ground-truth them, render and run their reference programs, check, store.

A round is a sequence of idempotent stages over items (problem ``i`` of the round). Each stage asks the store what
is still pending, does only that, and commits in small batches; the commit marker of an item is the row written
last (``round_items`` for generation, ``executions`` for execution, ``verdicts`` for contracts). Kill the process
at any point (SIGKILL included), run the same command again: the round is found by its config hash, resumed, and
completes with no sample lost or stored twice (every write is idempotent by content key).

Extension point for policies: a stage is any callable ``stage(ctx) -> Iterator[int]`` in ``STAGES`` (it yields
how many items it finished, for the progress bar). A policy stage would write ``attempts`` rows with this round
number; ``execute`` then runs every attempt of the round that has no execution, whoever wrote it.

One module per job: ``plan`` (what decides a round), ``context`` (what stages share), one module per stage
(``generate``, ``policy``, ``execute``, ``check``), ``summary`` (what a round produced) and ``run`` (the round).
"""

from flywheel.round.check import resolve_suite, stage_contracts
from flywheel.round.context import COMMIT_SECONDS, RoundContext, Stage, commit_every
from flywheel.round.execute import pending_attempts, stage_execute
from flywheel.round.generate import reference_attempt, stage_generate, stage_load_file
from flywheel.round.plan import RoundPlan
from flywheel.round.policy import stage_policy
from flywheel.round.run import STAGES, RoundOutcome, find_round, run_round
from flywheel.round.summary import rejections_by_contract, summarize

__all__ = ["COMMIT_SECONDS", "STAGES", "RoundContext", "RoundOutcome", "RoundPlan", "Stage", "commit_every",
           "find_round", "pending_attempts", "reference_attempt", "rejections_by_contract", "resolve_suite",
           "run_round", "stage_contracts", "stage_execute", "stage_generate", "stage_load_file", "stage_policy",
           "summarize"]
