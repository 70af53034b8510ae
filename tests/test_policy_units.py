"""Spec parsing, prompt templates, the problems file, retry delays, the capability-boundary table and the one failure
classification behind it, the evaluator's miss classes and the stats failures table."""

from __future__ import annotations

import numpy as np
import pytest

from flywheel.evaluate.score import Completion, judge
from flywheel.policies import load_problems_file, make_backend, parse_spec
from flywheel.policies.backends.retry import backoff_delay, parse_retry_after
from flywheel.policies.boundary import failure_taxonomy
from flywheel.policies.prompts import get_template, render, templates
from solvers.errors import ConfigError, ModelError, UnknownNameError
from solvers.failures import classify_failure, failure_reasons
from solvers.records import ExecStatus, Execution, SolveStatus


@pytest.mark.parametrize("spec, model, url", [
    ("openai:qwen@http://127.0.0.1:8000/v1", "qwen", "http://127.0.0.1:8000/v1"),
    ("openai:qwen@http://127.0.0.1:8000", "qwen", "http://127.0.0.1:8000/v1"),  # bare host gets /v1
    ("openai:org/model@name@https://api.example.com/v1/", "org/model@name", "https://api.example.com/v1"),
])
def test_openai_spec(spec, model, url):
    s = parse_spec(spec)
    assert (s.scheme, s.model, s.url, s.raw) == ("openai", model, url, spec)


@pytest.mark.parametrize("bad", ["qwen", "openai:qwen", "openai:@http://x", "openai:q@ftp://x", ":x", "hf:"])
def test_bad_specs_name_the_spec(bad):
    with pytest.raises(ConfigError) as err:
        parse_spec(bad)
    assert err.value.culprit == bad


def test_unknown_scheme_and_vllm_message(tmp_path):
    with pytest.raises(UnknownNameError):
        make_backend("ollama:x")
    with pytest.raises(ModelError, match="vllm serve"):
        make_backend(f"vllm:{tmp_path}")
    with pytest.raises(ModelError, match="config.json"):
        make_backend(f"hf:{tmp_path}")


def test_templates_are_versioned_and_hashed():
    names = {t.name for t in templates().values()}
    assert {"formulation_code", "code_only", "backtranslation", "critic", "refine", "paraphrase",
            "cot_rewrite"} <= names
    for api in ("gurobipy", "pyomo", "ortools", "coptpy", "docplex"):
        r = render("formulation_code", question="Maximise 3x.", api=api)
        assert r.template_id == "formulation_code/v1" and api in r.messages[-1]["content"]
        assert r.template_hash != get_template("formulation_code").hash  # covers the API hint file too
    a, b = render("code_only", question="q", api="pyomo"), render("code_only", question="q", api="ortools")
    assert a.template_hash != b.template_hash and a.prompt_hash != b.prompt_hash
    with pytest.raises(ConfigError, match="question"):
        render("paraphrase")
    with pytest.raises(UnknownNameError):
        render("formulation_code", question="q", api="cplexx")


def test_problems_file(tmp_path):
    f = tmp_path / "bench.jsonl"
    f.write_text('{"id": "a", "question": "Max x", "answer": 3}\n\n{"id": 7, "question": "Q", "answer": "infeasible"}\n'
                 '{"id": "c", "question": "Q2", "answer": null}\n')
    ps = load_problems_file(f)
    assert [p.problem_id for p in ps] == ["a", "7", "c"]
    assert ps[0].ground_truth.objective == 3 and ps[1].ground_truth.status == SolveStatus.INFEASIBLE
    assert ps[2].ground_truth is None and all(p.ir is None and p.label_source == "benchmark" for p in ps)
    for line, msg in [('{"question": "q"}', "id"), ('{"id": "x"}', "question"), ("{oops", "JSON"),
                      ('{"id": "x", "question": "q", "answer": "many"}', "answer"),
                      ('{"id": "a", "question": "q"}', "already used")]:
        f.write_text('{"id": "a", "question": "ok"}\n' + line + "\n")
        with pytest.raises(ConfigError, match=msg) as err:
            load_problems_file(f)
        assert err.value.culprit == f"{f}:2"


def test_backoff_is_bounded_jittered_and_honours_retry_after():
    rng = np.random.default_rng(0)
    delays = [backoff_delay(r, 0.5, 4.0, rng) for r in range(10) for _ in range(50)]
    assert max(delays) <= 4.0 and min(delays) >= 0 and len(set(delays)) > 100
    assert 2.0 <= backoff_delay(0, 0.5, 4.0, rng, retry_after_s=2.0) <= 2.0 + 0.125
    assert backoff_delay(0, 0.5, 4.0, rng, retry_after_s=3600) <= 4.0 + 0.125  # a hostile Retry-After is capped
    assert parse_retry_after("3") == 3.0 and parse_retry_after("Wed, 21 Oct 2015") is None


def test_failure_taxonomy_orders_the_pipeline():
    rows = [
        {"family": "f", "exec_status": "sandbox_error"},
        {"family": "f", "exec_status": "syntax_error"},
        {"family": "f", "exec_status": "ok", "verdicts": {"objective_matches": "fail", "executes": "pass"}},
        {"family": "f", "exec_status": "ok", "verdicts": {"objective_matches": "pass", "no_hardcoded_answer": "fail"}},
        {"family": "g", "exec_status": "solver_infeasible", "verdicts": {"status_matches_ground_truth": "pass"}},
        {"family": "g", "exec_status": "solver_infeasible", "verdicts": {"status_matches_ground_truth": "fail"}},
    ]
    table = {r["family"]: r for r in failure_taxonomy(rows)}
    f, g, total = table["f"], table["g"], table["all"]
    assert (f["infra"], f["code"], f["formulation"], f["pass"]) == (1, 2, 1, 0)
    assert (g["pass"], g["solver"], g["pass_rate"]) == (1, 1, 0.5)
    assert total["attempts"] == 6 and total["pass_rate"] == 0.2  # 1 pass of 5 judged (infra excluded)


@pytest.mark.parametrize("status", [s for s in ExecStatus if s != ExecStatus.OK])
def test_every_failure_report_classes_a_status_the_same_way(status: ExecStatus) -> None:
    """The capability boundary, the evaluator's miss class and the stats failures table agree on every execution
    status that ended without a solve (one table, solvers.failures, in three vocabularies)."""
    category, detail = classify_failure({"exec_status": status.value, "verdicts": {}})
    miss = judge(Completion(id="x", answer=3.0, code="x = 1"), Execution(program_id="x", status=status)).miss_class
    evaluator_words = {"code": {"code", "no_code"}, "limit": {"sandbox_limit"}, "solver": {"solver_outcome"},
                       "infra": {"infrastructure"}}
    assert detail == status.value and miss in evaluator_words[category]
    assert failure_reasons({"exec_status": status.value, "verdicts": {}, "accepted": False}) == [f"exec:{status}"]
    if status == ExecStatus.LICENSE_LIMIT:  # a licence-size refusal is never the model's error, in any report
        assert (category, miss) == ("infra", "infrastructure")
    if status in (ExecStatus.MEMORY_LIMIT, ExecStatus.OUTPUT_LIMIT, ExecStatus.PROCESS_LIMIT, ExecStatus.DENIED):
        assert (category, miss) == ("limit", "sandbox_limit")  # a sandbox rule, named as such in every report


def test_a_limit_after_a_solve_is_still_the_limit() -> None:
    """A program stopped by a sandbox rule after a solve (an intermediate one, whose objective is not the label's):
    the evaluator names the limit, not a formulation error."""
    from solvers.records import SolveCall

    solve = SolveCall(api="gurobipy", solver="gurobi", status="optimal", objective=5.0)
    verdict = judge(Completion(id="x", answer=3.0, code="x = 1"),
                    Execution(program_id="x", status=ExecStatus.DENIED, solves=(solve,)))
    assert verdict.miss_class == "sandbox_limit"


def test_a_correct_infeasible_answer_fails_on_the_contract_that_rejected_it() -> None:
    row = {"exec_status": "solver_infeasible", "accepted": False,
           "verdicts": {"status_matches_ground_truth": "pass", "no_diet": "fail", "numeric_coverage": "contract_error"}}
    assert classify_failure(row) == ("formulation", "no_diet")
    assert failure_reasons(row) == ["contract:no_diet", "contract:numeric_coverage"]  # every failed or errored one
    assert failure_reasons({**row, "verdicts": {"status_matches_ground_truth": "pass"}, "disputed": True}) == \
        ["disputed"]
