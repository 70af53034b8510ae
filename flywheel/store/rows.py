"""Records <-> store rows: the one place that flattens a Problem, Attempt or Execution into table columns and
rebuilds it. Nested data becomes canonical JSON text, so the round trip is exact."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from flywheel.generators._difficulty import measured_difficulty, measured_level
from solvers.ir import Model
from solvers.records import Attempt, Execution, GroundTruth, Problem, SolveCall, canonical_json


def _json(obj: Any) -> str:
    return canonical_json(obj)


def problem_row(p: Problem) -> dict[str, Any]:
    gt = p.ground_truth
    metrics = p.ir.metrics() if p.ir is not None else {}
    return {
        "problem_id": p.problem_id, "family": p.family, "generator_version": p.generator_version,
        "generator_code_hash": p.generator_code_hash, "seed": p.seed, "difficulty": p.difficulty,
        "template_id": p.template_id, "domain": p.domain, "question": p.question, "formulation": p.formulation,
        "params_json": _json(p.params), "ir_json": p.ir.to_json() if p.ir is not None else None,
        "ir_hash": p.ir.content_hash() if p.ir is not None else None,
        "problem_class": p.ir.problem_class if p.ir is not None else None, "metrics_json": _json(metrics),
        "n_vars": metrics.get("n_vars"), "n_constraints": metrics.get("n_constraints"),
        "infeasible_by_design": p.infeasible_by_design, "label_source": p.label_source,
        "gt_status": gt.status.value if gt else None, "gt_objective": gt.objective if gt else None,
        "gt_solution_json": _json(gt.solution) if gt else None, "disputed": gt.disputed if gt else False,
        "dispute_reason": gt.dispute_reason if gt else "",
        "gt_solvers": ",".join(f"{r.solver} {r.version}" for r in gt.runs) if gt else "",
        "ground_truth_json": gt.canonical_json() if gt else None,
        "gt_solve_ms": 1000 * max((r.solve_time_s for r in gt.runs), default=0.0) if gt else None,
        "agreement_rtol": gt.agreement_rtol if gt else None, "agreement_atol": gt.agreement_atol if gt else None,
        "reference_programs_json": _json(p.reference_programs),
        "application_domain": p.application_domain, "techniques": list(p.techniques),
        "n_techniques": len(p.techniques), "distractors_json": _json(list(p.distractors)),
        "n_nonzeros": metrics.get("n_nonzeros"),
        "n_int_vars": metrics.get("n_integer", 0) + metrics.get("n_binary", 0) if metrics else None,
        **_measured(metrics, len(p.techniques), gt),
    }


def _measured(metrics: Mapping[str, int], n_techniques: int, gt: GroundTruth | None) -> dict[str, Any]:
    """Measured difficulty needs the model and its ground-truth solve time; NULL without them."""
    if not metrics or gt is None:
        return {"measured_difficulty": None, "measured_level": None}
    score = measured_difficulty(metrics, n_techniques, 1000 * max((r.solve_time_s for r in gt.runs), default=0.0))
    return {"measured_difficulty": score, "measured_level": measured_level(score)}


def problem_from_row(row: Mapping[str, Any]) -> Problem:
    gt = row.get("ground_truth_json")
    return Problem(
        problem_id=row["problem_id"], family=row["family"], generator_version=row["generator_version"] or "",
        generator_code_hash=row["generator_code_hash"] or "", seed=row["seed"] or 0,
        difficulty=row["difficulty"] or 0, params=json.loads(row["params_json"] or "{}"),
        question=row["question"] or "", ir=Model.from_json(row["ir_json"]) if row.get("ir_json") else None,
        formulation=row["formulation"] or "", reference_programs=json.loads(row["reference_programs_json"] or "{}"),
        ground_truth=GroundTruth.model_validate_json(gt) if gt else None,
        infeasible_by_design=bool(row["infeasible_by_design"]), label_source=row["label_source"] or "generator",
        template_id=row["template_id"] or "", domain=row["domain"] or "",
        application_domain=row.get("application_domain") or "", techniques=tuple(row.get("techniques") or ()),
        distractors=tuple(json.loads(row.get("distractors_json") or "[]")),
    )


def attempt_row(a: Attempt, lineage: Mapping[str, Any] | None = None) -> dict[str, Any]:
    sampling = dict(a.sampling)
    return {
        "attempt_id": a.attempt_id, "problem_id": a.problem_id, "policy": a.policy, "api": a.api,
        "response": a.response, "code": a.code, "sample_index": a.sample_index, "prompt_template": a.prompt_template,
        "prompt_hash": a.prompt_hash, "sampling_json": _json(sampling), "label_source": a.label_source,
        "policy_model": str(sampling.get("model", "")), "policy_endpoint": str(sampling.get("endpoint", "")),
        "checkpoint_hash": str(sampling.get("checkpoint_hash", "")),
        "lineage_json": _json(dict(lineage or {})),
    }


def attempt_from_row(row: Mapping[str, Any]) -> Attempt:
    return Attempt(
        attempt_id=row["attempt_id"], problem_id=row["problem_id"], round=row.get("round") or 0,
        policy=row["policy"] or "", api=row["api"] or "", response=row["response"] or "", code=row["code"] or "",
        sample_index=row["sample_index"] or 0, prompt_template=row["prompt_template"] or "",
        prompt_hash=row["prompt_hash"] or "", sampling=json.loads(row["sampling_json"] or "{}"),
        label_source=row["label_source"] or "generator",
    )


def execution_row(attempt_id: str, e: Execution) -> dict[str, Any]:
    final = e.final_solve
    return {
        "attempt_id": attempt_id, "program_id": e.program_id, "status": e.status.value, "objective": e.objective,
        "final_solve_status": final.status.value if final else None, "n_solves": len(e.solves),
        "solver": final.solver if final else None, "solver_version": final.solver_version if final else None,
        "wall_s": e.wall_s, "cpu_s": e.cpu_s, "max_rss_mb": e.max_rss_mb, "error": e.error, "stdout": e.stdout,
        "stderr": e.stderr, "stdout_truncated": e.stdout_truncated, "stderr_truncated": e.stderr_truncated,
        "isolation": e.isolation,
    }


def solve_rows(attempt_id: str, e: Execution) -> list[dict[str, Any]]:
    return [{
        "attempt_id": attempt_id, "call_index": i, "api": s.api, "solver": s.solver,
        "solver_version": s.solver_version, "status": s.status.value, "objective": s.objective, "bound": s.bound,
        "mip_gap": s.mip_gap, "n_vars": s.n_vars, "n_int_vars": s.n_int_vars, "n_bin_vars": s.n_bin_vars,
        "n_constraints": s.n_constraints, "solve_time_s": s.solve_time_s, "sense": s.sense,
        "solution_json": _json(s.solution), "model_mps": s.model_mps, "verification": s.verification,
    } for i, s in enumerate(e.solves)]


def execution_from_rows(row: Mapping[str, Any], solves: list[Mapping[str, Any]]) -> Execution:
    calls = tuple(SolveCall(
        api=s["api"] or "", solver=s["solver"] or "", solver_version=s["solver_version"] or "", status=s["status"],
        objective=s["objective"], bound=s["bound"], mip_gap=s["mip_gap"],
        solution=json.loads(s["solution_json"] or "{}"), n_vars=s["n_vars"] or 0, n_int_vars=s["n_int_vars"] or 0,
        n_bin_vars=s["n_bin_vars"] or 0, n_constraints=s["n_constraints"] or 0,
        solve_time_s=s["solve_time_s"] or 0.0, model_mps=s["model_mps"], sense=s["sense"],
        verification=s.get("verification") or "",
    ) for s in sorted(solves, key=lambda s: s["call_index"]))
    return Execution(
        program_id=row["program_id"] or row["attempt_id"], status=row["status"], solves=calls,
        stdout=row["stdout"] or "", stderr=row["stderr"] or "", stdout_truncated=bool(row["stdout_truncated"]),
        stderr_truncated=bool(row["stderr_truncated"]), wall_s=row["wall_s"] or 0.0, cpu_s=row["cpu_s"] or 0.0,
        max_rss_mb=row["max_rss_mb"] or 0.0, error=row["error"] or "", isolation=row["isolation"] or "",
    )


def load_samples(store: Any, attempt_ids: Sequence[str]) -> list[Any]:
    """The ``contracts.sample.Sample`` of each executed attempt (its problem, attempt and execution with every solve
    call), rebuilt from ``store`` in ``attempt_ids`` order: what a contract suite judges."""
    from contracts.sample import Sample

    ids = {"ids": list(attempt_ids)}
    attempts = {a["attempt_id"]: a for a in store.query(
        "SELECT * FROM attempts WHERE attempt_id IN (SELECT unnest($ids))", ids).to_pylist()}
    problems = {p["problem_id"]: p for p in store.query(
        "SELECT * FROM problems WHERE problem_id IN (SELECT unnest($p))",
        {"p": sorted({a["problem_id"] for a in attempts.values()})}).to_pylist()}
    execs = {e["attempt_id"]: e for e in store.query(
        "SELECT * FROM executions WHERE attempt_id IN (SELECT unnest($ids))", ids).to_pylist()}
    solves: dict[str, list[dict[str, Any]]] = {}
    for s in store.query("SELECT * FROM solves WHERE attempt_id IN (SELECT unnest($ids))", ids).to_pylist():
        solves.setdefault(s["attempt_id"], []).append(s)
    return [Sample(problem=problem_from_row(problems[attempts[i]["problem_id"]]), attempt=attempt_from_row(attempts[i]),
                   execution=execution_from_rows(execs[i], solves.get(i, []))) for i in attempt_ids]
