"""``flywheel export --stage rl``: prompts and ground truth for RL, in the Parquet layout TRL and verl read.

One row per problem (the export's dedup and split apply as for SFT):

- verl's RL dataset: ``data_source`` ("or-flywheel/<family>"), ``prompt`` (a chat list, no assistant turn),
  ``ability`` ("operations-research"), ``reward_model`` {``style`` "rule", ``ground_truth``}, ``extra_info``
  {``problem_id``, ``answer``, ``reference_model_hash``, ``reference_mps``}; pair it with
  ``flywheel.rewards.compute_score``;
- TRL's ``GRPOTrainer``: the same ``prompt`` (conversational), ``answer`` (the ground truth, the column
  ``flywheel.rewards.solver_reward`` reads), ``reference_mps`` (partial credit) and ``problem_id``.

The ground truth is the problem's verified one (``gt_status`` / ``gt_objective``: two solvers agreed when it was
generated) as text: the objective with 17 significant digits, or "infeasible". ``reference_model_hash`` is the
structural hash of the problem's model (``flywheel.curation.structural``), ``reference_mps`` its MPS text.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from flywheel.curation import formats
from flywheel.curation.formats import Row, _lineage

ABILITY = "operations-research"
_MESSAGES = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
RL_COLUMNS = [
    ("data_source", pa.string()),
    ("prompt", _MESSAGES),
    ("ability", pa.string()),
    ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
    ("extra_info", pa.struct([("problem_id", pa.string()), ("answer", pa.string()),
                              ("reference_model_hash", pa.string()), ("reference_mps", pa.string())])),
    ("answer", pa.string()),
    ("reference_mps", pa.string()),
]


def ground_truth(row: Row) -> str | None:
    status = row.get("gt_status")
    if status == "infeasible":
        return "infeasible"
    if status == "optimal" and row.get("gt_objective") is not None:
        return f"{float(row['gt_objective']):.17g}"
    return None


def _reference(row: Row) -> tuple[str, str]:
    from flywheel.curation.structural import structural_hash
    from solvers.ir import Model

    text = row.get("ir_json")
    if not text:
        return "", ""
    try:
        model = Model.model_validate_json(text)
        return structural_hash(model) or "", model.to_mps()
    except Exception:  # noqa: BLE001 - a model that cannot be rendered only loses the partial-credit helpers
        return "", ""


def rl_row(row: Row, system: str | None = None, template: str | None = None) -> dict[str, Any]:
    """One RL record: the SFT record's system and user turns (same template rules), without the reply."""
    from flywheel.curation.export import ExportError

    answer = ground_truth(row)
    if answer is None:
        raise ExportError("an RL record needs a verified ground truth (optimal or infeasible)",
                          culprit=f"problem {row['problem_id']} (gt_status {row.get('gt_status')!r})")
    prompt = [m for m in formats.sft_row(row, system, template)["messages"] if m["role"] != "assistant"]
    model_hash, mps = _reference(row)
    lineage = _lineage(row)
    return {
        "data_source": f"or-flywheel/{row.get('family') or 'unknown'}",
        "prompt": prompt,
        "ability": ABILITY,
        "reward_model": {"style": "rule", "ground_truth": answer},
        "extra_info": {"problem_id": row["problem_id"], "answer": answer, "reference_model_hash": model_hash,
                       "reference_mps": mps},
        "answer": answer,
        "reference_mps": mps,
        **lineage,
    }


formats.STAGES["rl"] = rl_row
