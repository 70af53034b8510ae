"""Dedup as clustering: samples joined by problem, exact text, near-duplicate text or structural model identity.

Curation never deletes a duplicate silently: every selected sample lands in exactly one cluster, the cluster
records *why* its members are together, and the export keeps one representative per cluster by a stated rule
(``representative_rank``). The train/validation split is then made per cluster, so a problem and its paraphrase
can never sit on both sides.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from flywheel.curation.near import NearDupParams, near_duplicate_pairs
from flywheel.curation.normalize import exact_key


class DedupParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    exact: bool = Field(True, description="join samples whose normalised question text is identical")
    near: bool = Field(True, description="join near-duplicate questions (MinHash LSH)")
    structural: bool = Field(True, description="join samples whose problem models are structurally identical")
    near_params: NearDupParams = Field(default_factory=NearDupParams)


@dataclass(frozen=True)
class DedupItem:
    """What dedup needs of one sample. ``rank`` orders candidates for representative: smallest wins."""

    key: str  # attempt id
    problem_id: str
    text: str  # the question
    structural_hash: str | None
    rank: tuple = ()


@dataclass
class Cluster:
    cluster_id: str
    members: list[str]  # item keys, representative first
    reasons: set[str] = field(default_factory=set)  # problem | exact | near | structural
    split_key: str = ""  # the smallest problem id: stable across exports as long as that problem stays selected

    @property
    def representative(self) -> str:
        return self.members[0]


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: int, b: int) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        self.parent[max(ra, rb)] = min(ra, rb)
        return True


def cluster_items(items: Sequence[DedupItem], params: DedupParams | None = None) -> tuple[list[Cluster], dict[str, int]]:
    """Cluster ``items``; returns the clusters (ordered by their representative's rank) and how many joins each
    reason made (a join is a union of two previously separate clusters, so the counts add up to
    ``len(items) - len(clusters)``)."""
    params = params or DedupParams()
    uf = _UnionFind(len(items))
    joins: dict[str, int] = defaultdict(int)
    edge_reasons: list[tuple[int, int, str]] = []

    def join_groups(groups: dict[str, list[int]], reason: str) -> None:
        for members in groups.values():
            for other in members[1:]:
                edge_reasons.append((members[0], other, reason))
                if uf.union(members[0], other):
                    joins[reason] += 1

    by_problem: dict[str, list[int]] = defaultdict(list)
    for i, it in enumerate(items):
        by_problem[it.problem_id].append(i)
    join_groups(by_problem, "problem")
    if params.exact:
        by_text: dict[str, list[int]] = defaultdict(list)
        for i, it in enumerate(items):
            by_text[exact_key(it.text)].append(i)
        join_groups(by_text, "exact")
    if params.structural:
        by_model: dict[str, list[int]] = defaultdict(list)
        for i, it in enumerate(items):
            if it.structural_hash:
                by_model[it.structural_hash].append(i)
        join_groups(by_model, "structural")
    if params.near:
        # One text per problem: samples of one problem share a question, and comparing it with itself is waste.
        firsts = [members[0] for members in by_problem.values()]
        for a, b, _ in near_duplicate_pairs([items[i].text for i in firsts], params.near_params):
            edge_reasons.append((firsts[a], firsts[b], "near"))
            if uf.union(firsts[a], firsts[b]):
                joins["near"] += 1

    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(len(items)):
        groups[uf.find(i)].append(i)
    reasons_of: dict[int, set[str]] = defaultdict(set)
    for a, _, reason in edge_reasons:
        reasons_of[uf.find(a)].add(reason)
    clusters = []
    for root, members in groups.items():
        members.sort(key=lambda i: (items[i].rank, items[i].key))
        keys = [items[i].key for i in members]
        cid = hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()[:16]
        problems = sorted({items[i].problem_id for i in members})
        # "problem" alone (several samples of one problem) is not duplication between problems; report it anyway.
        clusters.append(Cluster(cid, keys, reasons_of.get(root, set()), split_key=problems[0]))
    index = {it.key: it for it in items}
    clusters.sort(key=lambda c: (index[c.representative].rank, c.representative))
    return clusters, dict(joins)
