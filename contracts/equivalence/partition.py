"""The coarsest equitable partition of a model's graph, in O(m log n), with a canonical cell order and certificate.

The graph: one vertex per column and per row, an edge per nonzero coefficient (labelled by it, rounded) and per
quadratic term (labelled apart; a square term is a loop). Two vertices stay in one cell while their multisets of
edge labels into every cell are equal: the stable colouring of colour refinement (1-WL), which the synchronous
rounds of ``canonical.refine`` also reach, but in as many rounds as the graph is long (a 1,500-period chain took
~95 s there). Here cells are split by one splitter cell at a time (Cardon and Crochemore's equitable-partition
algorithm, as in nauty and bliss): a cell that splits queues every fragment but its largest, whose counts follow from
its parent's, so each vertex is a splitter O(log n) times.

Everything is decided in an order that no renaming or reordering changes: cells are ranges of one permutation,
named by where they start; initial cells sorted by their colour, fragments by their label multiset (the part the
splitter does not touch first); the queue is FIFO. So a cell's start is a canonical colour, and isomorphic models
end with the same starts and the same ``certificate`` (a digest of the label table, the initial cells and every
split: splitter, cell, and each fragment's labels and size, recorded also where nothing splits, so the quotient
structure is in it and not only the partition's shape).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict, deque


class Equitable:
    """``Equitable(n_vars, edges, colours)``: vertices 0..n_vars-1 are columns, the rest rows; ``edges`` are
    ``(u, v, label)`` with any sortable label; ``colours`` (one per vertex, sortable) is the initial partition."""

    def __init__(self, n_vars: int, edges: list[tuple[int, int, object]], colours: list) -> None:
        n = len(colours)
        self.n_vars = n_vars
        table = sorted(set(lab for _, _, lab in edges))
        lid = {lab: k for k, lab in enumerate(table)}
        self.adj: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        for u, v, lab in edges:
            self.adj[u].append((v, lid[lab]))
            if u != v:
                self.adj[v].append((u, lid[lab]))
        self.perm = sorted(range(n), key=lambda v: colours[v])
        self.pos = [0] * n
        self.start = [0] * n
        self.size: dict[int, int] = {}
        self._digest = hashlib.sha1(repr(table).encode())
        cells = []
        for p, v in enumerate(self.perm):
            self.pos[v] = p
            if p == 0 or colours[v] != colours[self.perm[p - 1]]:
                cells.append(p)
                self.size[p] = 0
            self.start[v] = cells[-1]
            self.size[cells[-1]] += 1
        self._digest.update(repr([(colours[self.perm[s]], self.size[s]) for s in cells]).encode())
        self.work = 0  # adjacency entries read by splitters: O(m log n) (tests/test_contracts_partition.py)
        self.changed: list[tuple[int, int]] = []  # (start, size) of every cell a split made or shrank
        self.queue: deque[int] = deque(cells)
        self.queued = set(cells)
        self._run()

    def _run(self) -> None:
        while self.queue:
            s = self.queue.popleft()
            self.queued.discard(s)
            keys: dict[int, list[int]] = defaultdict(list)
            for u in self.perm[s:s + self.size[s]]:
                self.work += len(self.adj[u])
                for w, lab in self.adj[u]:
                    keys[w].append(lab)
            by_cell: dict[int, list[int]] = defaultdict(list)
            for w in keys:
                by_cell[self.start[w]].append(w)
            record = []
            for c in sorted(by_cell):
                groups: dict[tuple, list[int]] = defaultdict(list)
                for w in by_cell[c]:
                    groups[tuple(sorted(keys[w]))].append(w)
                untouched = self.size[c] - len(by_cell[c])
                frags = sorted(groups.items())
                record.append((c, untouched, [(k, len(g)) for k, g in frags]))
                if untouched or len(frags) > 1:
                    self._split(c, untouched, [g for _, g in frags])
            self._digest.update(repr((s, record)).encode())

    def _split(self, c: int, untouched: int, groups: list[list[int]]) -> None:
        """Cell ``c`` becomes: its ``untouched`` vertices (if any) at ``c``, then each group in the given order."""
        boundary, end = c + untouched, c + self.size[c]
        moved = {w for g in groups for w in g}
        # Touched vertices go to [boundary, end): swap each one left of it with an untouched one right of it.
        outside = [w for w in self.perm[boundary:end] if w not in moved]
        inside = [w for w in moved if self.pos[w] < boundary]
        for a, b in zip(inside, outside, strict=True):
            pa, pb = self.pos[a], self.pos[b]
            self.perm[pa], self.perm[pb], self.pos[a], self.pos[b] = b, a, pb, pa
        p, frags = boundary, ([(c, untouched)] if untouched else [])
        for g in groups:
            frags.append((p, len(g)))
            for w in g:
                self.perm[p], self.pos[w], self.start[w] = w, p, frags[-1][0]
                p += 1
        for s, n in frags:
            self.size[s] = n
        if c in self.queued:
            new = [s for s, _ in frags if s != c]
        else:
            largest = max(range(len(frags)), key=lambda k: (frags[k][1], -k))
            new = [s for k, (s, _) in enumerate(frags) if k != largest]
        self.queue.extend(new)
        self.queued.update(new)
        self.changed.extend(frags)

    def individualise(self, v: int) -> None:
        """Give ``v`` a cell of its own (after the rest of its cell) and refine to the new equitable partition."""
        c = self.start[v]
        if self.size[c] > 1:
            self._digest.update(repr(("individualise", c)).encode())
            self._split(c, self.size[c] - 1, [[v]])
            self._run()

    def copy(self) -> Equitable:
        """An independent copy of this partition (the graph itself is shared: it never changes), for a search that
        individualises in one branch and backtracks."""
        e = Equitable.__new__(Equitable)
        e.n_vars, e.adj, e.perm, e.pos, e.start = self.n_vars, self.adj, list(self.perm), list(self.pos), list(self.start)
        e.size, e._digest, e.work, e.changed = dict(self.size), self._digest.copy(), self.work, []
        e.queue, e.queued = deque(self.queue), set(self.queued)
        return e

    @property
    def certificate(self) -> str:
        return self._digest.hexdigest()[:16]

    def colours(self) -> tuple[list[int], list[int]]:
        """Each column's and each row's cell (its start): equal for vertices that refinement cannot tell apart."""
        return self.start[:self.n_vars], self.start[self.n_vars:]
