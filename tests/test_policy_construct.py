"""AI-assisted construction against a real HTTP server whose replies are scripted from the prompt: backtranslation
with critic and refine, paraphrase, mutation. A story is used only when numeric coverage holds."""

from __future__ import annotations

import numpy as np
import pytest
from support.scripted_server import ScriptedServer

from flywheel.config import PolicySection
from flywheel.generators.base import generate_problem
from flywheel.policies.construct import backtranslate, mutate, paraphrase
from flywheel.policies.coverage import story_coverage

SETTINGS = PolicySection(timeout_s=10, max_retries=1, backoff_base_s=0.01, max_tokens=256)


@pytest.fixture(scope="module")
def problems():
    return [generate_problem("production_planning", seed=200 + i, difficulty=1) for i in range(3)]


def make_reply(problems):
    """good: story = the generator's question; needs_refine: first story drops a sentence, the refine fixes it;
    invents: every story adds a number the model does not have."""
    good, needs_refine, invents = problems

    def reply(body):
        text = body["messages"][-1]["content"]
        if text.startswith("Check whether"):
            return "VERDICT: OK"
        for p in problems:
            if p.formulation in text:
                if p is invents:
                    return p.question + " The shop opened in 1987."
                if p is needs_refine and text.startswith("Write a word problem"):
                    return p.question.split(".")[0] + "."
                return p.question
            if text.startswith("Rewrite this word problem") and p.question in text:
                # paraphrase: the first problem is re-worded faithfully, the others get one number changed
                return "In other words: " + p.question if p is good else p.question + " Budget: 98765 dollars."
        return "?"

    return reply


def test_backtranslation_critic_refine_and_coverage(problems, tmp_path):
    with ScriptedServer(reply=make_reply(problems)) as server:
        run = backtranslate(problems, f"openai:fake@{server.url}", cache_dir=tmp_path, settings=SETTINGS)
        sent = len(server.log)
        again = backtranslate(problems, f"openai:fake@{server.url}", cache_dir=tmp_path, settings=SETTINGS)
        assert len(server.log) == sent and again.counters.requests_sent == 0  # all cached
    good, refined, invented = run.results
    assert good.accepted and len(good.steps) == 2  # story + critic
    assert refined.accepted and [s["template"] for s in refined.steps] == [
        "backtranslation/v1", "critic/v1", "refine/v1", "critic/v1"]
    assert not invented.accepted and "1987" in invented.reason and invented.problem is None
    for r in (good, refined):
        assert r.problem.ir == problems[0 if r is good else 1].ir  # same model, same answer
        assert r.problem.problem_id != r.source_id and "backtranslation" in r.problem.template_id
        assert story_coverage(r.problem.question, r.problem.ir, r.problem.distractors).ok
    assert sent == 2 + 4 + 4  # good: 2 calls; refined: 4; invented: story, critic, refine, critic


def test_paraphrase_keeps_only_number_preserving_rewrites(problems, tmp_path):
    with ScriptedServer(reply=make_reply(problems)) as server:
        run = paraphrase(problems, f"openai:fake@{server.url}", cache_dir=tmp_path, settings=SETTINGS)
    assert [r.accepted for r in run.results] == [True, False, False]
    assert run.results[0].problem.question.startswith("In other words: ")
    assert all("98765" in r.reason for r in run.results[1:])


def test_mutation_rebuilds_a_covered_instance(problems):
    run = mutate(problems, np.random.default_rng(0), scale=0.3)
    assert all(r.accepted for r in run.results)
    for r, p in zip(run.results, problems, strict=True):
        new = r.problem
        assert new.ir != p.ir and new.ground_truth is None and new.family == p.family
        # the generator re-told the perturbed numbers, in the source's own phrasing (a generic variant with
        # distractors stays one: its recorded distractors are the only numbers the model does not have)
        assert new.template_id.startswith(p.template_id + "|mutation-of:")
        assert story_coverage(new.question, new.ir, new.distractors).ok
