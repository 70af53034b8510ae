"""Prompt alignment between training and inference (issue 9): an SFT record exported with ``--template code_only``
has exactly the system and user turns the policy sends for the same problem, and the trainer's token sequence for
that record starts with exactly the tokens the ``hf:`` backend feeds the model. The copy-rate metric is checked on
known cases."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from flywheel.config import PolicySection
from flywheel.curation.formats import build_row
from flywheel.demo.metrics import copy_rate, numbers
from flywheel.generators.base import generate_problem
from flywheel.policies import generate_attempts
from flywheel.policies.backends.base import Backend, ChatRequest, Completion, OnResult
from flywheel.policies.backends.hf import chat_text
from flywheel.policies.spec import parse_spec
from solvers.render import render

API = "gurobipy"


class Recorder(Backend):
    """A backend that records the messages it is asked to complete and answers with a fixed program."""

    scheme = "recorder"

    def __init__(self) -> None:
        super().__init__(parse_spec("openai:recorder@http://127.0.0.1:1"), PolicySection(template="code_only"))
        self.seen: list[tuple[dict[str, str], ...]] = []

    async def run(self, requests: Sequence[ChatRequest], on_result: OnResult) -> None:
        for r in requests:
            self.seen.append(tuple(r.messages))
            on_result(r, Completion(text="```python\nprint(1)\n```", finish_reason="stop"))


@pytest.fixture(scope="module")
def problem():
    return generate_problem("transportation", seed=12345, difficulty=1)


def _store_row(problem, code: str) -> dict:
    # The columns export reads from the store's samples view (a generator's reference attempt: response = code).
    return {"question": problem.question, "code": code, "response": code, "api": API, "problem_id": problem.problem_id,
            "family": problem.family, "attempt_id": "a1", "label_source": "generator",
            "formulation": problem.formulation}


def test_exported_sft_prompt_is_the_policy_prompt(problem, tmp_path) -> None:
    code = render(problem.ir, API)
    record = build_row("sft", _store_row(problem, code), template="code_only")
    backend = Recorder()
    run = generate_attempts([problem], "openai:recorder@http://127.0.0.1:1", samples=1, temperature=0.0, api=API,
                            round_id=1, cache_dir=tmp_path / "cache", progress=False,
                            settings=PolicySection(template="code_only"), backend=backend)
    assert len(run.attempts) == 1 and len(backend.seen) == 1
    assert [dict(m) for m in backend.seen[0]] == record["messages"][:-1]
    # The assistant turn is what code_only asks for: one fenced program, no formulation before it.
    assert record["messages"][-1] == {"role": "assistant", "content": f"```python\n{code.rstrip()}\n```"}
    # Without a template the old behaviour stands: the bare question, and formulation + code for a bare program.
    plain = build_row("sft", _store_row(problem, code))
    assert plain["messages"][0] == {"role": "user", "content": problem.question.strip()}
    assert plain["messages"][1]["content"].endswith(f"```python\n{code.rstrip()}\n```")
    assert plain["messages"][1]["content"] != record["messages"][-1]["content"]
    asyncio.run(backend.aclose())


def test_trainer_tokens_start_with_the_hf_prompt_tokens(problem) -> None:
    from training.data import tokenize_row
    from training.tokenizer import render_chat, train_tokenizer

    code = render(problem.ir, API)
    record = build_row("sft", _store_row(problem, code), template="code_only")
    tok = train_tokenizer([render_chat(record["messages"])[0]] * 4, vocab_size=300)
    doc = tokenize_row(record, tok)
    prompt_ids = tok(chat_text(tok, record["messages"][:-1]), add_special_tokens=False)["input_ids"]
    first_target = doc.targets_mask.index(True)
    # The hf: backend's prompt is exactly the trainer's context before the first target token (no extra BOS, same
    # chat template), so the model is prompted at inference the way it was trained.
    assert doc.ids[:first_target] == prompt_ids
    assert tok.decode(doc.ids[first_target:]).startswith("```python")


def test_copy_rate_counts_distinct_question_numbers() -> None:
    q = "Capacity 344 hours, profit 11 and 17.5 per unit, Warehouse_3 needs 11 tons."
    assert numbers(q) == {344.0, 11.0, 17.5}  # Warehouse_3 is an identifier, 11 is counted once
    assert copy_rate(q, 'cap = 344\nprofit = {"A": 11.0, "B": 17.5}') == 1.0
    assert copy_rate(q, "cap = 344") == pytest.approx(1 / 3)
    assert copy_rate(q, "") == 0.0
    assert copy_rate("no numbers here", "x = 1") is None


def test_demo_set_overrides_parse_by_field_type_and_name_the_nearest_key() -> None:
    from flywheel.demo.__main__ import overrides
    from flywheel.demo.sizes import SIZES
    from solvers.errors import FlywheelError

    size = overrides(SIZES["speedrun"], ["sft_steps=36", "families=diet,tsp", "zero_shot=false", "lr_sft=1e-4"])
    assert (size.sft_steps, size.families, size.zero_shot, size.lr_sft) == (36, ("diet", "tsp"), False, 1e-4)
    assert SIZES["speedrun"].sft_steps != 36  # the size itself is untouched
    with pytest.raises(FlywheelError, match="sft_steps"):
        overrides(SIZES["speedrun"], ["sft_step=3"])
    with pytest.raises(FlywheelError, match="must be of type int"):
        overrides(SIZES["speedrun"], ["rounds=two"])
    with pytest.raises(FlywheelError, match="KEY=VALUE"):
        overrides(SIZES["speedrun"], ["rounds"])
    # A run's seed moves round 0's problems and the data order, never into the rounds' seed range (1000 r + d).
    assert overrides(SIZES["speedrun"], ["seed=2"]).seed == 2
    with pytest.raises(FlywheelError, match="0..99"):
        overrides(SIZES["speedrun"], ["seed=100"])
