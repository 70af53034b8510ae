"""The store's tables: their columns, content keys, and the derived SQL views.

A physical table is a set of immutable Parquet parts under ``tables/<name>/round=<r>/``; its view in SQL has the
same name. Nested data (parameters, IR, solutions, sampling settings, environment) is stored as JSON text in
``*_json`` columns so every column has one flat, stable type and DuckDB's ``json_extract`` can reach inside.

Writes are idempotent by each table's ``key``: a row whose key is already stored is dropped, so re-running any
stage after a crash adds nothing twice. Other stages register their own tables with ``register_table`` instead of
editing this file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from solvers.errors import unknown_name
from solvers.failures import INFRA_STATUSES

# Bumped whenever a table gains, loses or changes a column; flywheel/store/migrations.py says how to move up.
SCHEMA_VERSION = 1

# Short names keep the column lists below readable: string, int64, float64, bool, UTC timestamp.
S, INT, F, B = pa.string(), pa.int64(), pa.float64(), pa.bool_()
TS = pa.timestamp("us", tz="UTC")


@dataclass(frozen=True)
class TableSpec:
    """One physical table: ordered columns (name -> Arrow type), the content key, and what a row means."""

    name: str
    columns: dict[str, pa.DataType]
    key: tuple[str, ...]
    doc: str
    # Columns the writer fills when a row leaves them out (e.g. ``created_at``); everything else defaults to NULL.
    auto: tuple[str, ...] = field(default=("round", "created_at"))

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([pa.field(n, t) for n, t in self.columns.items()])


def _cols(*pairs: tuple[str, pa.DataType]) -> dict[str, pa.DataType]:
    return {"round": INT, **dict(pairs), "created_at": TS}


TABLES: dict[str, TableSpec] = {}


def register_table(spec: TableSpec) -> TableSpec:
    """Add a physical table (used by later stages such as curation). Re-registering the same spec is a no-op."""
    if spec.name in TABLES and TABLES[spec.name] != spec:
        raise ValueError(f"table {spec.name!r} registered twice with different columns")
    missing = [k for k in spec.key if k not in spec.columns]
    if missing:
        raise ValueError(f"table {spec.name!r}: key columns {missing} are not columns")
    TABLES[spec.name] = spec
    return spec


def get_table(name: str) -> TableSpec:
    if name not in TABLES:
        raise unknown_name("store table", name, list(TABLES))
    return TABLES[name]


register_table(TableSpec(
    "problems",
    _cols(
        ("problem_id", S), ("family", S), ("generator_version", S), ("generator_code_hash", S), ("seed", INT),
        ("difficulty", INT), ("template_id", S), ("domain", S), ("question", S), ("formulation", S),
        ("params_json", S), ("ir_json", S), ("ir_hash", S), ("problem_class", S), ("metrics_json", S),
        ("n_vars", INT), ("n_constraints", INT), ("infeasible_by_design", B), ("label_source", S),
        ("gt_status", S), ("gt_objective", F), ("gt_solution_json", S), ("disputed", B), ("dispute_reason", S),
        ("gt_solvers", S), ("ground_truth_json", S), ("gt_solve_ms", F), ("agreement_rtol", F), ("agreement_atol", F),
        ("reference_programs_json", S),
        # Added with issue 20 (NULL in older parts; the list reads as []): metadata SQL slices by, and the
        # measured difficulty (size, techniques, ground-truth solve time) next to the knob.
        ("application_domain", S), ("techniques", pa.list_(S)), ("n_techniques", INT), ("distractors_json", S),
        ("n_nonzeros", INT), ("n_int_vars", INT), ("measured_difficulty", F), ("measured_level", INT),
    ),
    key=("problem_id",),
    doc="one row per distinct problem (first round that produced it), with its ground truth",
))

register_table(TableSpec(
    "round_items",
    _cols(("idx", INT), ("problem_id", S), ("family", S), ("seed", INT), ("api", S), ("attempt_id", S)),
    key=("round", "idx"),
    doc="item idx of a round: its problem and reference attempt (the generate stage's commit marker)",
))

register_table(TableSpec(
    "attempts",
    _cols(
        ("attempt_id", S), ("problem_id", S), ("policy", S), ("api", S), ("response", S), ("code", S),
        ("sample_index", INT), ("prompt_template", S), ("prompt_hash", S), ("sampling_json", S), ("label_source", S),
        ("policy_model", S), ("policy_endpoint", S), ("checkpoint_hash", S), ("lineage_json", S),
    ),
    key=("attempt_id",),
    doc="one program that claims to solve a problem (a generator reference program or a policy sample)",
))

register_table(TableSpec(
    "executions",
    _cols(
        ("attempt_id", S), ("program_id", S), ("status", S), ("objective", F), ("final_solve_status", S),
        ("n_solves", INT), ("solver", S), ("solver_version", S), ("wall_s", F), ("cpu_s", F), ("max_rss_mb", F),
        ("error", S), ("stdout", S), ("stderr", S), ("stdout_truncated", B), ("stderr_truncated", B),
        ("isolation", S),
    ),
    key=("attempt_id",),
    doc="what happened when an attempt's program ran in the sandbox (written last: marks the attempt done)",
))

register_table(TableSpec(
    "solves",
    _cols(
        ("attempt_id", S), ("call_index", INT), ("api", S), ("solver", S), ("solver_version", S), ("status", S),
        ("objective", F), ("bound", F), ("mip_gap", F), ("n_vars", INT), ("n_int_vars", INT), ("n_bin_vars", INT),
        ("n_constraints", INT), ("solve_time_s", F), ("sense", S), ("solution_json", S), ("model_mps", S),
        ("verification", S),  # SolveCall.verification; NULL in parts written before it existed
    ),
    key=("attempt_id", "call_index"),
    doc="one row per solver call captured inside an execution",
))

# verdicts, repairs and disputes take the contract engine's rows (contracts.verdicts) as they are: row.model_dump().
register_table(TableSpec(
    "verdicts",
    _cols(
        ("verdict_id", S), ("sample_id", S), ("attempt_id", S), ("problem_id", S), ("suite", S), ("contract", S),
        ("version", S), ("stage", S), ("severity", S), ("outcome", S), ("score", F), ("message", S),
        ("evidence", S), ("dispute", S), ("duration_s", F),
    ),
    key=("verdict_id",),
    doc="one row per sample x contract version: outcome pass | fail | skip | contract_error",
))

register_table(TableSpec(
    "repairs",
    _cols(
        ("repair_id", S), ("sample_id", S), ("attempt_id", S), ("contract", S), ("version", S), ("kind", S),
        ("message", S), ("before", S), ("after", S),
    ),
    key=("repair_id",),
    doc="an answer-blind repair: the attempt it changed, the contract, and the program before and after",
))

register_table(TableSpec(
    "disputes",
    _cols(
        ("dispute_id", S), ("sample_id", S), ("problem_id", S), ("contract", S), ("kind", S), ("message", S),
        ("evidence", S),
    ),
    key=("dispute_id",),
    doc="a problem whose ground truth is in doubt (solvers disagree, or a candidate beats it)",
))

register_table(TableSpec(
    "round_events",
    _cols(
        ("event", S), ("event_at", TS), ("config_hash", S), ("config_json", S), ("env_json", S), ("command", S),
        ("summary_json", S),
    ),
    key=("round", "event", "event_at"),
    doc="started / resumed / finished events of a round, with its config and environment (the rounds view)",
))

register_table(TableSpec(
    "shards",
    _cols(
        ("shard_id", S), ("stage", S), ("path", S), ("selection", S), ("counts_json", S), ("hashes_json", S),
        ("manifest_json", S),
    ),
    key=("shard_id",),
    doc="an exported training shard: where it is, what selected it, counts and hashes",
))

register_table(TableSpec(
    "infra_errors",
    _cols(
        ("error_id", S), ("stage", S), ("problem_id", S), ("attempt_id", S), ("policy", S), ("kind", S),
        ("message", S), ("event_at", TS),
    ),
    key=("error_id",),
    doc="infrastructure failures (policy endpoint down, sandbox crash): never counted against a model",
))


# The statuses solvers.failures (the one failure classification) calls infrastructure, as a SQL list.
_INFRA_SQL = ", ".join(f"'{status}'" for status in INFRA_STATUSES)

# Derived views, created after every physical table's view. Order matters: later views may use earlier ones.
# |a - b| <= 1e-6 + 1e-6 * max(|a|, |b|) is the agreement rule ground truth itself uses (GroundTruth.agreement_*),
# so a sample "matches" exactly when a second ground-truth solver would have agreed.
DERIVED_VIEWS: dict[str, str] = {
    "rounds": """
        SELECT round,
               any_value(config_hash) AS config_hash,
               any_value(config_json) FILTER (WHERE event = 'started') AS config_json,
               min(event_at) FILTER (WHERE event = 'started') AS started_at,
               max(event_at) FILTER (WHERE event = 'finished') AS finished_at,
               CASE WHEN bool_or(event = 'finished') THEN 'finished' ELSE 'incomplete' END AS status,
               count(*) FILTER (WHERE event = 'resumed') AS resumes,
               any_value(env_json) FILTER (WHERE event = 'started') AS env_json,
               any_value(command) FILTER (WHERE event = 'started') AS command,
               any_value(summary_json) FILTER (WHERE event = 'finished') AS summary_json
        FROM round_events GROUP BY round
    """,
    "verdict_summary": """
        SELECT attempt_id,
               count(*) AS n_verdicts,
               -- The engine's rule: a failed reject-severity contract rejects; a contract_error never rejects on
               -- its own (one broken user contract must not empty a round); a raised dispute holds the sample.
               NOT bool_or(severity = 'reject' AND outcome = 'fail') AND NOT bool_or(coalesce(dispute, '') <> '')
                   AS accepted,
               string_agg(contract, ',' ORDER BY contract) FILTER (WHERE outcome IN ('fail', 'contract_error'))
                   AS failed_contracts,
               string_agg(contract || '@' || version, ',' ORDER BY contract) AS contract_versions
        FROM verdicts GROUP BY attempt_id
    """,
    "samples": f"""
        SELECT a.attempt_id, a.problem_id, a.round, a.policy, a.api, a.sample_index, a.label_source,
               a.prompt_template, a.prompt_hash, a.sampling_json, a.policy_model, a.policy_endpoint,
               a.checkpoint_hash, a.code, a.response,
               p.family, p.difficulty, p.seed, p.generator_version, p.generator_code_hash, p.params_json,
               p.template_id, p.domain, p.question, p.formulation, p.problem_class, p.infeasible_by_design,
               p.gt_status, p.gt_objective, p.disputed, p.agreement_rtol, p.agreement_atol,
               p.application_domain, p.techniques, p.n_techniques, p.measured_difficulty, p.measured_level,
               e.status AS exec_status, e.objective, e.final_solve_status, e.solver, e.solver_version,
               e.wall_s, e.cpu_s, e.isolation,
               CASE
                   WHEN e.attempt_id IS NULL THEN NULL
                   WHEN p.gt_status = 'optimal' THEN e.status = 'ok' AND e.objective IS NOT NULL
                        AND abs(e.objective - p.gt_objective)
                            <= 1e-6 + 1e-6 * greatest(abs(e.objective), abs(p.gt_objective))
                   WHEN p.gt_status = 'infeasible' THEN e.status = 'solver_infeasible'
                   ELSE false
               END AS objective_match,
               v.n_verdicts, v.failed_contracts, v.contract_versions,
               -- A licence-size refusal or a sandbox fault says nothing about the program: never accepted.
               v.accepted AND NOT p.disputed AND coalesce(e.status, '') NOT IN ({_INFRA_SQL})
                   AS accepted,
               r.env_json, r.config_hash AS round_config_hash
        FROM attempts a
        JOIN problems p USING (problem_id)
        LEFT JOIN executions e USING (attempt_id)
        LEFT JOIN verdict_summary v USING (attempt_id)
        LEFT JOIN rounds r ON r.round = a.round
    """,
}


def duckdb_type(t: pa.DataType) -> str:
    """The DuckDB type name of an Arrow type used in TABLES (for the typed empty relation of a table)."""
    names = {pa.string(): "VARCHAR", pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN",
             TS: "TIMESTAMPTZ"}
    if t in names:
        return names[t]
    if pa.types.is_list(t):
        return duckdb_type(t.value_type) + "[]"
    raise TypeError(f"no DuckDB type for {t}")
