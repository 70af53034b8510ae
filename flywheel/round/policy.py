"""Stage ``policy`` (only when the round names a policy): K samples per problem, stored as attempts with lineage."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from flywheel.round.context import RoundContext, commit_every, infra_error_row
from flywheel.store.lineage import environment
from flywheel.store.rows import attempt_row


def stage_policy(ctx: RoundContext) -> Iterator[int]:
    """K policy samples per problem of the round, through the policy's response cache (in the store directory,
    so a resumed round re-asks nothing it already got). Committed per batch of problems: attempts, then the
    infrastructure failures (never counted against the model; asked again on the next run)."""
    plan, store, r = ctx.plan, ctx.store, ctx.round
    if plan.policy is None:
        return
    from flywheel.config import PolicySection
    from flywheel.policies import generate_attempts
    from flywheel.store.rows import problem_from_row

    items = store.query(
        """
        SELECT i.idx, i.api, p.*, (SELECT count(*) FROM attempts a
                                   WHERE a.problem_id = i.problem_id AND a.policy = $policy) AS have
        FROM round_items i JOIN problems p USING (problem_id) WHERE i.round = $r ORDER BY i.idx
        """, {"r": r, "policy": plan.policy}).to_pylist()
    ctx.set_total("policy", len(items))
    pending = [it for it in items if it["have"] < plan.samples]
    ctx.advance("policy", len(items) - len(pending))
    settings = PolicySection(**plan.policy_settings)
    step = commit_every(len(items))
    env = environment()
    for start in range(0, len(pending), step):
        chunk = pending[start:start + step]
        by_api: dict[str, list[dict[str, Any]]] = {}
        for it in chunk:
            api = plan.api if plan.api != "rotate" else plan.item(it["idx"])[2]
            by_api.setdefault(api, []).append(it)
        attempts, errors = [], []
        for api, group in by_api.items():
            run = generate_attempts([problem_from_row(it) for it in group], plan.policy, samples=plan.samples,
                                    temperature=plan.temperature, api=api, round_id=r, cache_dir=store.root,
                                    progress=False, settings=settings)
            families = {it["problem_id"]: it for it in group}
            for a in run.attempts:
                p = families[a.problem_id]
                lineage = {"generator": {"family": p["family"], "version": p["generator_version"],
                                         "code_hash": p["generator_code_hash"], "seed": p["seed"]},
                           "policy": plan.policy, "prompt_template": a.prompt_template, "prompt_hash": a.prompt_hash,
                           "sampling": a.sampling, "details": run.details.get(a.attempt_id, {}), "round": r,
                           "round_config_hash": plan.config_hash, "env": env}
                attempts.append(attempt_row(a, lineage))
            errors += [infra_error_row([r, e, time.time()], "policy", str(e.get("kind", "")),
                                       str(e.get("message", ""))[:2000], problem_id=e.get("problem_id"),
                                       policy=plan.policy) for e in run.infra_errors]
        if attempts:
            store.write("attempts", r, attempts)
        if errors:
            store.write("infra_errors", r, errors)
            ctx.notes.append(f"policy: {len(errors)} request(s) failed (infra_errors); rerun to ask again")
        ctx.advance("policy", len(chunk))
        yield len(chunk)


