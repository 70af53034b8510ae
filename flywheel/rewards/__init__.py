"""Solver-verified rewards for RL: one scoring core (``core.py``), thin adapters for TRL and verl.

    # TRL: GRPOTrainer(reward_funcs=solver_reward, ...) with a dataset column ``answer`` (a number or "infeasible")
    from flywheel.rewards import solver_reward
    # verl: custom_reward_function.path=<site-packages>/flywheel/rewards/__init__.py, name=compute_score
    from flywheel.rewards import compute_score

Both run the completions' programs on a running ``flywheel sandbox serve`` when ``FLYWHEEL_SANDBOX_URL`` is set
(token: ``FLYWHEEL_SANDBOX_TOKEN``), else on this process's warm local pool. A ``sandbox_error`` is a missing reward
(``None``), never 0. ``FLYWHEEL_REWARD=partial`` turns on partial credit; ``FLYWHEEL_REWARD_FORMAT`` sets the
format term (``core.RewardWeights``). With ``FLYWHEEL_REWARD_STORE`` (or ``configure(store=...)``) every call is
logged to the store as attempts + executions with lineage (policy, checkpoint, step): RL rollouts feed the flywheel.
These two import paths are stable: other tools import them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

from flywheel.rewards.core import RewardWeights, Score, completion_text, parse_answer, score
from solvers.records import Execution

__all__ = ["solver_reward", "compute_score", "score_completions", "configure", "RewardWeights", "Score",
           "parse_answer"]

_settings: dict[str, Any] = {}
_log_lock = threading.Lock()


def configure(*, store: str | None = None, policy: str | None = None, checkpoint: str | None = None,
              weights: RewardWeights | None = None, timeout_s: float | None = None, server: str | None = None,
              round: int | None = None) -> None:
    """Process-wide reward settings (each also readable from the environment; see the module docstring)."""
    for key, value in (("store", store), ("policy", policy), ("checkpoint", checkpoint), ("weights", weights),
                       ("timeout_s", timeout_s), ("server", server), ("round", round)):
        if value is not None:
            _settings[key] = value


def _setting(key: str, env: str, default: Any = None) -> Any:
    return _settings.get(key, os.environ.get(env, default))


def execute(codes: Sequence[str | None], timeout_s: float | None = None) -> list[Execution | None]:
    """Run each program (None: nothing to run) on the service or the local pool; input order kept."""
    from solvers.sandbox import Program, SandboxConfig, run_batch
    from solvers.sandbox.program import DEFAULT_TIMEOUT_S

    timeout = float(timeout_s or _setting("timeout_s", "FLYWHEEL_REWARD_TIMEOUT", DEFAULT_TIMEOUT_S))
    server = _setting("server", "FLYWHEEL_SANDBOX_URL")
    config = SandboxConfig(timeout_s=timeout, **({"backend": "server", "server_url": server} if server else {}))
    programs = [Program(program_id=f"reward-{i}", code=c) for i, c in enumerate(codes) if c]
    done = iter(run_batch(programs, config)) if programs else iter(())
    return [next(done) if c else None for c in codes]


def score_completions(texts: Sequence[str], answers: Sequence[Any], *, reference_mps: Sequence[str | None] | None
                      = None, weights: RewardWeights | None = None) -> tuple[list[Score], list[str | None],
                                                                             list[Execution | None]]:
    """The core on a batch: extract, execute (one batch), score. Returns scores, codes and executions."""
    from contracts.extract import extract_code

    weights = weights or _settings.get("weights") or RewardWeights.from_env()
    codes = [extract_code(t) for t in texts]
    executions = execute(codes)
    refs = list(reference_mps) if reference_mps is not None else [None] * len(texts)
    scores = [score(t, c, a, e, weights, r) for t, c, a, e, r in zip(texts, codes, answers, executions, refs,
                                                                     strict=True)]
    return scores, codes, executions


def solver_reward(prompts: Sequence[Any], completions: Sequence[Any], answer: Sequence[Any] | None = None,
                  **kwargs: Any) -> list[float | None]:
    """TRL ``GRPOTrainer`` reward function. ``answer``: the dataset column (a number or "infeasible");
    ``completions``: strings or chat message lists. Optional dataset columns used when present:
    ``reference_mps`` (partial credit), ``problem_id`` (logging). TRL's ``trainer_state`` gives the step."""
    if answer is None:
        raise ValueError("solver_reward needs the dataset column 'answer' (a number or 'infeasible')")
    texts = [completion_text(c) for c in completions]
    scores, codes, executions = score_completions(texts, list(answer), reference_mps=kwargs.get("reference_mps"))
    state = kwargs.get("trainer_state")
    step = int(getattr(state, "global_step", 0) or kwargs.get("step") or 0)
    _maybe_log("trl", prompts, texts, codes, executions, scores, step, kwargs.get("problem_id"))
    return [s.reward for s in scores]


def compute_score(data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None,
                  **kwargs: Any) -> float | None | list[float | None]:
    """verl's custom reward function (``NaiveRewardManager``: one item; ``BatchRewardManager``: lists, then one
    batch through the sandbox). ``ground_truth``: ``reward_model.ground_truth`` (a number or "infeasible");
    ``extra_info`` may carry ``reference_mps``, ``problem_id``, ``step``. None: no reward (infrastructure)."""
    batch = isinstance(solution_str, list | tuple)
    texts = list(solution_str) if batch else [solution_str]
    truths = list(ground_truth) if batch else [ground_truth]
    infos = list(extra_info) if batch and isinstance(extra_info, list | tuple) else [extra_info] * len(texts)
    infos = [i if isinstance(i, dict) else {} for i in infos]
    scores, codes, executions = score_completions([str(t) for t in texts], truths,
                                                  reference_mps=[i.get("reference_mps") for i in infos])
    step = int(infos[0].get("step", 0) or 0) if infos else 0
    _maybe_log("verl", [i.get("prompt", "") for i in infos], texts, codes, executions, scores, step,
               [i.get("problem_id") for i in infos])
    rewards = [s.reward for s in scores]
    return rewards if batch else rewards[0]


def _maybe_log(source: str, prompts: Sequence[Any], texts: Sequence[str], codes: Sequence[str | None],
               executions: Sequence[Execution | None], scores: Sequence[Score], step: int,
               problem_ids: Sequence[Any] | None) -> None:
    path = _setting("store", "FLYWHEEL_REWARD_STORE")
    if not path:
        return
    from flywheel.rewards.log import log_rewards

    with _log_lock:
        log_rewards(path, source=source, policy=_setting("policy", "FLYWHEEL_POLICY", "rl"),
                    checkpoint=_setting("checkpoint", "FLYWHEEL_POLICY_CHECKPOINT", ""), step=step,
                    round=int(_setting("round", "FLYWHEEL_REWARD_ROUND", 0)), prompts=prompts, texts=texts,
                    codes=codes, executions=executions, scores=scores, problem_ids=problem_ids)
