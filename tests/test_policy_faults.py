"""Fault injection: a real HTTP server on 127.0.0.1 answers 429 (Retry-After), 5xx, 401, malformed JSON, truncated
bodies and replies slower than the client timeout. The run completes, retries are bounded, every failure is an
infrastructure row that says what happened, and a re-run only re-asks what failed."""

from __future__ import annotations

import pytest
from support.scripted_server import ScriptedServer

from flywheel.config import PolicySection
from flywheel.generators.base import generate_problem
from flywheel.policies import generate_attempts
from flywheel.policies.run import sample_seed

# Short timeouts and backoff keep the test fast; 2 s is still >100x the scripted server's normal reply time, even
# on this shared 2-core machine under heavy load (a normal reply timing out would flip an expected outcome).
SETTINGS = PolicySection(concurrency=4, timeout_s=2.0, max_retries=3, backoff_base_s=0.01, backoff_max_s=0.1,
                         max_tokens=64)

# (script for sample 0 of problem i, expected outcome: attempt tries, or (infra kind, http status, tries))
CASES = [
    (["429", "ok"], 2),
    (["500", "503", "ok"], 3),
    (["malformed", "ok"], 2),
    (["truncated", "ok"], 2),
    (["slow", "ok"], 2),
    (["no_choices", "ok"], 2),
    (["500!"], ("server_error", 500, 4)),
    (["429!"], ("rate_limited", 429, 4)),
    (["401!"], ("http_error", 401, 1)),  # a client error is not retried
    (["slow!"], ("timeout", None, 4)),
    (["truncated!"], ("truncated", None, 4)),
    (["malformed!"], ("malformed", 200, 4)),  # HTTP 200 with a body that is not a chat reply
]


@pytest.fixture(scope="module")
def problems():
    return [generate_problem("production_planning", seed=100 + i, difficulty=1) for i in range(len(CASES))]


def test_faults_are_retried_bounded_and_recorded(problems, tmp_path):
    script = {sample_seed(p.problem_id, 0): case[0] for p, case in zip(problems, CASES, strict=True)}
    with ScriptedServer(script=script, slow_s=3.0) as server:
        spec = f"openai:fake@{server.url}"
        run = generate_attempts(problems, spec, samples=2, temperature=0.7, api="gurobipy", round_id=1,
                                cache_dir=tmp_path, progress=False, settings=SETTINGS)
        sent_first = len(server.log)

        by_problem = {(a.problem_id, a.sample_index): a for a in run.attempts}
        infra = {(e["problem_id"], e["sample_index"]): e for e in run.infra_errors}
        for p, (_, expected) in zip(problems, CASES, strict=True):
            seed = sample_seed(p.problem_id, 0)
            assert (p.problem_id, 1) in by_problem  # the unscripted second sample always succeeds first try
            if isinstance(expected, int):
                a = by_problem[(p.problem_id, 0)]
                assert run.details[a.attempt_id]["tries"] == expected
                assert server.requests_for(seed) == expected
                assert "gurobipy" in a.code and a.policy == spec and a.round == 1
            else:
                kind, status, tries = expected
                row = infra[(p.problem_id, 0)]
                assert (row["kind"], row["http_status"], row["attempts"]) == (kind, status, tries), row
                assert server.requests_for(seed) == tries  # bounded: max_retries + 1 at most
                assert row["message"]
        n_fail = sum(1 for _, e in CASES if not isinstance(e, int))
        assert len(run.infra_errors) == n_fail
        assert len(run.attempts) == 2 * len(CASES) - n_fail
        assert run.requests_sent == sent_first
        assert run.retries == sent_first - 2 * len(CASES)

        # Re-run: successes come from the cache; only the failed requests are asked again (and fail again).
        again = generate_attempts(problems, spec, samples=2, temperature=0.7, api="gurobipy", round_id=1,
                                  cache_dir=tmp_path, progress=False, settings=SETTINGS)
        assert again.cache_hits == len(run.attempts)
        assert [a.attempt_id for a in again.attempts] == [a.attempt_id for a in run.attempts]
        asked = {s for s, _ in server.log[sent_first:]}
        failed_seeds = {sample_seed(p.problem_id, 0) for p, (_, e) in zip(problems, CASES, strict=True)
                        if not isinstance(e, int)}
        assert asked == failed_seeds


def test_connection_refused_is_infrastructure(problems, tmp_path):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = SETTINGS.model_copy(update={"max_retries": 1})
    run = generate_attempts(problems[:2], f"openai:fake@http://127.0.0.1:{port}/v1", samples=1, temperature=0.0,
                            api="pyomo", round_id=0, cache_dir=tmp_path, progress=False, settings=settings)
    assert run.attempts == []
    assert [e["kind"] for e in run.infra_errors] == ["connection", "connection"]
    assert all(e["attempts"] == 2 for e in run.infra_errors)
