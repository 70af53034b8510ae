"""The store tables curation writes: dedup clusters and decontamination hits, one set per exported shard.

Registered with the store's ``register_table`` (importing this module is enough), so ``flywheel sql`` can ask
``SELECT * FROM clusters WHERE shard_id = '…'`` or which benchmark items the dropped samples matched.
"""

from __future__ import annotations

import pyarrow as pa

from flywheel.store.schema import TableSpec, register_table

_S, _INT, _F, _B = pa.string(), pa.int64(), pa.float64(), pa.bool_()
_TS = pa.timestamp("us", tz="UTC")

CLUSTERS = register_table(TableSpec(
    "clusters",
    {
        "round": _INT, "shard_id": _S, "attempt_id": _S, "problem_id": _S, "cluster_id": _S, "representative": _B,
        "cluster_size": _INT, "reasons": _S, "split": _S, "created_at": _TS,
    },
    key=("shard_id", "attempt_id"),
    doc="dedup clusters of an export: every selected sample, its cluster, why it is there, and where it went "
        "(train | validation | duplicate | contaminated)",
))

CONTAMINATION = register_table(TableSpec(
    "contamination",
    {
        "round": _INT, "shard_id": _S, "attempt_id": _S, "problem_id": _S, "benchmark": _S, "item_id": _S,
        "kind": _S, "shared_ngrams": _INT, "overlap": _F, "created_at": _TS,
    },
    key=("shard_id", "attempt_id", "benchmark", "item_id", "kind"),
    doc="decontamination hits of an export: the sample, the benchmark item it matched, and how (ngram | near | "
        "structural)",
))
