"""Training records from samples: SFT chat ``messages`` and CPT documents, registered by stage name.

Both read one joined sample row (the store's ``samples`` view plus the problem's formulation) and return one
training row with the agreed columns (SFT: ``messages``; CPT: ``text``; both: ``problem_id``, ``family``,
``source``) and a few lineage columns the trainer may ignore.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from solvers.errors import unknown_name

# A response "holds reasoning" when, with its code blocks removed, at least this many words remain: enough for a
# sentence or two of modelling explanation rather than a bare "Here is the code:".
MIN_REASONING_WORDS = 20
_CODE_BLOCK = re.compile(r"```.*?```", re.S)

Row = Mapping[str, Any]


def holds_reasoning(response: str, code: str = "") -> bool:
    """Whether ``response`` says something besides its program: fenced blocks and the extracted code are removed
    first, so a bare program (a generator's reference attempt stores the program itself as its response) is not
    mistaken for reasoning."""
    text = _CODE_BLOCK.sub(" ", response or "")
    if code.strip():
        text = text.replace(code.strip(), " ")
    return len(text.split()) >= MIN_REASONING_WORDS


def code_block(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"


def assistant_text(row: Row) -> str:
    """The policy's own response if it reasons; otherwise the verified formulation followed by the code."""
    response = row.get("response") or ""
    if holds_reasoning(response, row.get("code") or ""):
        return response.strip()
    formulation = (row.get("formulation") or "").strip()
    parts = [formulation] if formulation else []
    parts.append(code_block(row.get("code") or ""))
    return "\n\n".join(parts)


def result_sentence(row: Row) -> str:
    """What the solvers established, in words (the 'explanation' of a CPT document)."""
    status = row.get("gt_status") or "unknown"
    solver = " ".join(x for x in (row.get("solver"), row.get("solver_version")) if x)
    ran = f"Running the program with {solver}" if solver else "Running the program"
    if status == "optimal" and row.get("gt_objective") is not None:
        # 10 significant digits: the solvers agree to 1e-6 relative, so further digits are noise, not information.
        return (f"{ran} gives an optimal objective value of {float(row['gt_objective']):.10g}, which two "
                "independent solvers confirmed when the problem was generated.")
    if status == "infeasible":
        return f"{ran} proves the model infeasible, as two independent solvers confirmed: no plan meets every constraint."
    return f"{ran} ends with solver status {status}."


def code_reply(row: Row) -> str:
    """The reply a code-only prompt asks for: the fenced program and nothing else."""
    return code_block(row.get("code") or "")


# What the assistant turn holds when SFT records are rendered with a policy prompt template: the reply that template
# asks for. Templates not listed get ``assistant_text`` (the policy's reasoning, or formulation + code).
TEMPLATE_REPLIES: dict[str, Callable[[Row], str]] = {"code_only": code_reply}


def sft_row(row: Row, system: str | None = None, template: str | None = None) -> dict[str, Any]:
    """One chat record. With ``template`` (a policy prompt template name, see ``flywheel.policies.prompts``) the
    system and user turns are exactly what the policy sends for this question and API, so a model trained on the
    record is prompted at inference the way it was trained; without it the user turn is the bare question."""
    if template:
        from flywheel.policies.prompts import get_template, render

        prompt = render(template, question=(row.get("question") or "").strip(), api=row.get("api") or "gurobipy")
        messages = [dict(m) for m in prompt.messages]
        if system:
            messages = [{"role": "system", "content": system}] + [m for m in messages if m["role"] != "system"]
        reply = TEMPLATE_REPLIES.get(get_template(template).name, assistant_text)(row)
    else:
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": (row.get("question") or "").strip()})
        reply = assistant_text(row)
    messages.append({"role": "assistant", "content": reply})
    return {"messages": messages, **_lineage(row)}


def cpt_row(row: Row, system: str | None = None, template: str | None = None) -> dict[str, Any]:
    del system, template  # documents have no chat turns
    sections = [f"## Problem\n\n{(row.get('question') or '').strip()}"]
    formulation = (row.get("formulation") or "").strip()
    if formulation:
        sections.append(f"## Mathematical formulation\n\n{formulation}")
    api = row.get("api") or "Python"
    sections.append(f"## Solver program ({api})\n\n{code_block(row.get('code') or '')}")
    sections.append(f"## Result\n\n{result_sentence(row)}")
    text = "# A solver-verified optimisation problem\n\n" + "\n\n".join(sections) + "\n"
    return {"text": text, **_lineage(row)}


def _lineage(row: Row) -> dict[str, Any]:
    return {
        "problem_id": row["problem_id"],
        "family": row.get("family") or "",
        "source": row.get("label_source") or "",
        "attempt_id": row["attempt_id"],
        "policy": row.get("policy") or "",
        "api": row.get("api") or "",
        "difficulty": row.get("difficulty"),
        "round": row.get("round"),
        "cluster_id": row.get("cluster_id") or "",
    }


STAGES: dict[str, Callable[..., dict[str, Any]]] = {"sft": sft_row, "cpt": cpt_row}


def build_row(stage: str, row: Row, system: str | None = None, template: str | None = None) -> dict[str, Any]:
    if stage not in STAGES:
        raise unknown_name("export stage", stage, list(STAGES))
    return STAGES[stage](row, system, template)
