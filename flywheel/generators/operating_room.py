"""Operating-room scheduling (MILP): put every surgery into one room on one day. A room-day session has its regular
hours; it may run late, but only after calling in the overtime team (binary ``late``, a fixed cost) and then by at
most ``max_overtime`` minutes (big-M indicator: ``60 * overtime <= max_overtime * late``, overtime in hours), each
overtime hour paid. If-then rule: if surgery A is on a day, its follow-up B is not on that day (``A on d + B on d
<= 1`` for each day). Each day a surgery waits beyond the first (``waited[j]``, the index of its day) costs its
priority points. Minimise overtime plus waiting costs.

Durations are in minutes and sessions in hours (``minutes <= 60 * (hours + overtime)``). Feasible by construction:
a planted schedule keeps every follow-up pair on different days, and the regular hours and the overtime allowance
are set from its session loads. Infeasible variant: one surgery lasts longer than the longest session with its
full overtime allowance, so it fits no session.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, join, listing, spread
from flywheel.generators.base import Family, pick, register
from solvers.ir import Model, VarType, number_text


@register
class OperatingRoom(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 4x2x2 / 6x2x3 / 7x2x3 jobs x rooms x days by difficulty, job and room names drawn from the
        # domain's pool (``spread``, ``drawn_names``); the days stay in order. At least two rooms (the story's
        # rooms are plural) and the jobs the follow-up pairs below take.
        n_pairs = 1 + difficulty // 2
        jobs = drawn_names(rng, v["jobs"], spread(rng, 3 + difficulty + difficulty // 2, 2 * n_pairs), "Job")
        rooms = drawn_names(rng, v["rooms"], spread(rng, 2 + difficulty // 4, 2, high=len(v["rooms"])), "Room")
        days = [f"Day{k}" for k in range(1, 1 + spread(rng, 2 + difficulty // 2, 2))]
        minutes = {j: 15 * int(rng.integers(3, 17)) for j in jobs}
        order = [jobs[int(i)] for i in rng.permutation(len(jobs))]
        pairs = [order[2 * k: 2 * k + 2] for k in range(n_pairs)]
        day = {j: pick(rng, days) for j in jobs}
        for a, b in pairs:  # the planted schedule keeps each follow-up pair apart
            day[b] = day[b] if day[b] != day[a] else days[(days.index(day[a]) + 1) % len(days)]
        room = {j: pick(rng, rooms) for j in jobs}
        load = {(r, d): sum(minutes[j] for j in jobs if room[j] == r and day[j] == d) for r in rooms for d in days}
        hours = {r: max(1, int(max(load[(r, d)] for d in days) * rng.uniform(0.75, 0.95) / 60)) for r in rooms}
        over = max(load[(r, d)] - 60 * hours[r] for r in rooms for d in days)
        return {"jobs": jobs, "rooms": rooms, "days": days, "minutes": minutes, "hours": hours,
                "max_overtime": max(30, 15 * math.ceil(over / 15)), "late_cost": 50 * int(rng.integers(4, 20)),
                "overtime_rate": 10 * int(rng.integers(20, 60)), "priority": {j: int(rng.integers(1, 40)) for j in jobs},
                "apart": pairs}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        j = pick(rng, data["jobs"])
        longest = 60 * max(data["hours"].values()) + data["max_overtime"]
        return {**data, "minutes": {**data["minutes"], j: longest + 15 * int(rng.integers(1, 4))}}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        jobs, rooms, days = b.elements("jobs", "rooms", "days")
        b.add_param("wait", {d: k for k, d in enumerate(days)}, ("days",), "days", "days waited beyond the first",
                    derived=True)
        b.add_param("minutes_per_hour", 60, (), "minutes", "minutes in an hour (sessions are in hours)",
                    derived=True)
        x = b.add_vars("assign", ("jobs", "rooms", "days"), VarType.BINARY,
                       description="1 if the case is in the room on the day")
        late = b.add_vars("late", ("rooms", "days"), VarType.BINARY, description="1 if the session runs late")
        extra = b.add_vars("overtime", ("rooms", "days"), description="hours the session runs late", unit="hours")
        waited = b.add_vars("waited", ("jobs",), description="days the case waits beyond the first", unit="days")
        b.add_constrs("once", ("jobs",), "every case is scheduled exactly once",
                      lambda j: ([(x[(j, r, d)], 1) for r in rooms for d in days], "==", 1))
        b.add_constrs("session", ("rooms", "days"), "case minutes within 60 * (regular hours plus overtime)",
                      lambda r, d: ([(x[(j, r, d)], data["minutes"][j]) for j in jobs] + [(extra[(r, d)], -60)],
                                    "<=", 60 * data["hours"][r]))
        b.add_constrs("overtime", ("rooms", "days"), "overtime only with the team called in (big-M)",
                      lambda r, d: ([(extra[(r, d)], 60), (late[(r, d)], -data["max_overtime"])], "<=", 0))
        b.add_constrs("apart", ("jobs", "jobs", "days"), "if the first of a pair is on a day, the second is not",
                      lambda a, c, d: ([(x[(j, r, d)], 1) for j in (a, c) for r in rooms], "<=", 1),
                      keys=[(a, c, d) for a, c in data["apart"] for d in days])
        b.add_constrs("waiting", ("jobs",), "days a case waits: the index of its day",
                      lambda j: ([(waited[(j,)], 1)] + [(x[(j, r, d)], -k) for r in rooms for k, d in enumerate(days)],
                                 "==", 0))
        b.set_objective("minimize", [(late[(r, d)], data["late_cost"]) for r in rooms for d in days]
                        + [(extra[(r, d)], data["overtime_rate"]) for r in rooms for d in days]
                        + [(waited[(j,)], data["priority"][j]) for j in jobs],
                        description="overtime plus waiting costs")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        jobs = data["jobs"]
        job, room = v["job"], v["room"]
        length = listing(data["minutes"], jobs, "{k} {v} min")
        prio = listing(data["priority"], jobs)
        apart = "; ".join((f"if {a} is on a day, {c} ({v['pair']}) must not be that day" for a, c in data["apart"]))
        setting = f"The {room}s {listing(data['hours'], data['rooms'], '{k} ({v} hours)')} are open on {join(data['days'])}. A session may run late only if {v['team']} is called in, at ${number_text(data['late_cost'])} per session, and then by at most {number_text(data['max_overtime'])} minutes, paid at ${number_text(data['overtime_rate'])} per hour."
        waiting = f"Every day a {job} waits after {data['days'][0]} costs its priority points: {prio}; a point counts the same as a dollar."
        rows = [[j, data["minutes"][j], data["priority"][j]] for j in jobs]
        return {"apart": apart, "job": job, "length": length, "room": room, "rows": rows, "setting": setting, "waiting":
                waiting}
