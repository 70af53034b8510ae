"""Assembly line balancing, type 2 (MILP): assign every task (a time in seconds) to one of a fixed number of
stations in line order so that each task sits no later in the line than the tasks that need it (precedence:
``sum_s s x[a,s] <= sum_s s x[b,s]`` for every ``a`` before ``b``), and minimise the cycle time, the largest
station load (min-max: ``cycle >= load_s`` for every station), within a stated longest cycle (in minutes; the
coefficient is 60 seconds per minute). A valid cut, ``cycle >= longest task``, tightens the LP relaxation (which
may split a task between stations).

Feasible by construction: the longest cycle is set at or above the largest load of a witness assignment (tasks in
their topological order, filled station by station up to the average load, the rest to the last station).
Infeasible variant: the longest cycle is cut below the average station load (total time / stations); the loads
sum to the total time, so some station always carries at least the average.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, join, listing, plural, spread
from flywheel.generators.base import Family, register
from solvers.ir import Model, VarType, number_text


def _witness_load(times: list[int], stations: int) -> int:
    """The largest load when tasks, in topological order, fill stations up to the average load in turn."""
    target = sum(times) / stations
    loads = [0] * stations
    s = 0
    for t in times:
        if loads[s] + t > target and loads[s] > 0 and s < stations - 1:
            s += 1
        loads[s] += t
    return max(loads)


@register
class AssemblyLineBalancing(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 6x2 / 7x3 / 8x3 tasks x stations by difficulty, names drawn from the domain's pool (``spread``,
        # ``drawn_names``). The pool lists the tasks in process order, and the drawn tasks keep it: a topological order.
        pool = self.vocab[domain]["tasks"]
        drawn = drawn_names(rng, pool, spread(rng, 5 + difficulty, 2), "Task")
        tasks = [t for t in pool if t in drawn] + [t for t in drawn if t not in pool]
        time = {t: int(rng.integers(10, 90)) for t in tasks}  # seconds
        after = {b: sorted({tasks[int(i)] for i in rng.integers(0, k, size=int(rng.integers(1, 3)))})
                 for k, b in enumerate(tasks) if k > 0 and rng.random() < 0.8}
        stations = spread(rng, 2 + difficulty // 2, 2)
        worst = _witness_load([time[t] for t in tasks], stations)
        return {"tasks": tasks, "time": time, "after": after, "stations": stations,
                "max_cycle": (math.ceil(worst / 6) + int(rng.integers(0, 6))) / 10}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        average = sum(data["time"].values()) / data["stations"]  # seconds
        return {**data, "max_cycle": max(0, math.floor(average / 6) - int(rng.integers(1, 3))) / 10}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (tasks,) = b.elements("tasks")
        stations = b.add_set("stations", [f"S{k + 1}" for k in range(data["stations"])], "stations in line order")
        b.add_param("time", data["time"], ("tasks",), "seconds", "time of a task")
        b.add_param("n_stations", data["stations"], (), "stations", "number of stations")
        b.add_param("max_cycle", data["max_cycle"], (), "minutes", "longest allowed cycle time")
        position = {s: k + 1 for k, s in enumerate(stations)}
        b.add_param("position", position, ("stations",), "", "number of a station along the line (1 = first)")
        x = b.add_vars("assign", ("tasks", "stations"), VarType.BINARY, description="1 if the task is at the station")
        cycle = b.add_var("cycle", description="cycle time: the largest station load", unit="seconds")
        b.con_group("assign", ("tasks",), "every task at exactly one station")
        for t in tasks:
            b.add_constr("assign", (t,), [(x[(t, s)], 1) for s in stations], "==", 1)
        b.con_group("load", ("stations",), "the cycle time is at least every station's load (min-max)")
        for s in stations:
            b.add_constr("load", (s,), [(x[(t, s)], data["time"][t]) for t in tasks] + [(cycle, -1)], "<=", 0)
        b.add_constrs("precedence", ("tasks", "tasks"), "a task's station is no later than its successor's",
                      lambda a, c: ([(x[(a, s)], position[s]) for s in stations]
                                    + [(x[(c, s)], -position[s]) for s in stations], "<=", 0),
                      keys=[(a, c) for c, before in data["after"].items() for a in before])
        # Valid but not implied by the LP relaxation (which may split a task): a tighter bound, a faster proof.
        b.con_group("longest_task", (), "the cycle time is at least the longest task")
        b.add_constr("longest_task", (), [(cycle, 1)], ">=", max(data["time"].values()))
        b.con_group("max_cycle", (), "the cycle time within the longest allowed (minutes x 60)")
        b.add_constr("max_cycle", (), [(cycle, 1)], "<=", 60 * data["max_cycle"])
        b.set_objective("minimize", [(cycle, 1)], description="cycle time in seconds")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        tasks = data["tasks"]
        st = v["station"]
        times = listing(data["time"], tasks, "{k} {v} s")
        order = (
            "; ".join((f"{c} needs {join(before)} done first" for c, before in data["after"].items() if c in tasks))
            or "no task depends on another"
        )
        rule = f"A task may not sit at a {st} earlier in the line than a task it needs (the same {st} is fine)."
        limit = f"The cycle time may not exceed {number_text(data['max_cycle'])} minutes."
        numbers = join([number_text(k + 1) for k in range(data["stations"])])
        count = f"{number_text(data['stations'])} {plural(st)} in a row, numbered {numbers} along the line"
        rows = [[t, data["time"][t], join(data["after"].get(t, [])) or "-"] for t in tasks]
        return {"count": count, "limit": limit, "order": order, "rows": rows, "rule": rule, "st": st, "times": times}
