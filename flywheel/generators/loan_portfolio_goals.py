"""Loan portfolio goal programme (LP): a lender spreads a fixed fund over loan types (each capped) and comes as
close as it can to three goals, paying stated penalty weights for each unit of deviation in the unwanted
direction: a return goal (interest earned, shortfall penalised), a risk goal (the average risk score at most a
target, written without a ratio as ``sum_l (score_l - target) x_l + under - over = 0``, excess penalised) and a
share goal (priority loans at least ``s%`` of all lending: ``sum_pri x - s/100 sum_all x + under - over = 0``,
shortfall penalised). Interest rates are stated in percent: the coefficient is ``rate / 100``.

Feasible by construction: every cap is 30-60% of the fund and there are at least four loan types, so the caps
together exceed the fund. Infeasible variant: the fund, which must be lent in full, is raised above the sum of
the caps, so ``sum x = fund > sum caps >= sum x``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._phrasing import thousands
from flywheel.generators._text import drawn_names, join, listing, spread
from flywheel.generators.base import Family, register
from solvers.ir import Model, number_text


@register
class LoanPortfolioGoals(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 4 / 5 / 6 loan types by difficulty (at least four: the caps must exceed the fund), names drawn
        # from the domain's pool (``spread``, ``drawn_names``).
        loans = drawn_names(rng, self.vocab[domain]["loans"], spread(rng, 3 + difficulty, 4), "Loan")
        fund = int(rng.integers(10, 60)) * 100  # thousand dollars
        rate = {k: round(float(rng.integers(30, 130)) / 10, 1) for k in loans}  # percent per year
        risk = {k: int(rng.integers(1, 10)) for k in loans}
        cap = {k: int(fund * rng.uniform(0.3, 0.6)) for k in loans}
        mean_rate = sum(rate.values()) / len(loans)
        priority = sorted(loans[int(i)] for i in rng.permutation(len(loans))[:max(1, len(loans) // 3)])
        return {"loans": loans, "fund": fund, "rate": rate, "risk": risk, "cap": cap, "priority": priority,
                "return_goal": int(fund * mean_rate / 100 * rng.uniform(0.9, 1.2)),
                "risk_target": max(1.5, round(sum(risk.values()) / len(loans) - int(rng.integers(0, 15)) / 10, 1)),
                "share": int(rng.integers(20, 50)), "w_return": int(rng.integers(4, 12)),
                "w_risk": int(rng.integers(1, 4)), "w_share": int(rng.integers(2, 8))}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        return {**data, "fund": int(sum(data["cap"].values()) + rng.integers(1, 50))}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (loans,) = b.elements("loans")
        x = b.add_vars("lend", ("loans",), description="amount lent per loan type", unit="thousand dollars")
        dev = {(g, s): b.add_var(f"{g}_{s}", description=f"{s} deviation from the {g} goal")
               for g in ("return", "risk", "share") for s in ("under", "over")}

        def goal(name: str, terms: list[tuple[str, float]], rhs: float, text: str) -> None:
            b.con_group(f"{name}_goal", (), text)
            b.add_constr(f"{name}_goal", (), terms + [(dev[(name, "under")], 1), (dev[(name, "over")], -1)], "==",
                         rhs)

        goal("return", [(x[(k,)], data["rate"][k] / 100) for k in loans], data["return_goal"],
             "interest earned (rate / 100) plus shortfall minus excess equals the goal")
        goal("risk", [(x[(k,)], data["risk"][k] - data["risk_target"]) for k in loans], 0,
             "risk score above the target, weighted by amount, balanced by the deviations (average as a ratio)")
        goal("share", [(x[(k,)], (k in data["priority"]) - data["share"] / 100) for k in loans], 0,
             "priority lending minus its share of all lending, balanced by the deviations")
        b.con_group("fund", (), "the whole fund is lent")
        b.add_constr("fund", (), [(x[(k,)], 1) for k in loans], "==", data["fund"])
        b.con_group("cap", ("loans",), "no loan type beyond its cap")
        for k in loans:
            b.add_constr("cap", (k,), [(x[(k,)], 1)], "<=", data["cap"][k])
        b.set_objective("minimize", [(dev[("return", "under")], data["w_return"]),
                                     (dev[("risk", "over")], data["w_risk"]),
                                     (dev[("share", "under")], data["w_share"])],
                        description="weighted penalty of the unwanted goal deviations")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        loans = data["loans"]
        d = data
        fund = f"{number_text(d['fund'])} thousand dollars"
        goals = f"Goals: interest income of at least {number_text(d['return_goal'])} thousand dollars a year (each thousand dollars short costs {number_text(d['w_return'])} penalty points); an average risk score, weighted by the amounts lent, of at most {number_text(d['risk_target'])} (the excess is the sum over loan types of (score - {number_text(d['risk_target'])}) x thousand dollars lent; each unit of it costs {number_text(d['w_risk'])} points); and at least {number_text(d['share'])}% of all lending going to {v['priority']}, that is {join(d['priority'])}, as {v['why']} asks (each thousand dollars short costs {number_text(d['w_share'])} points)."
        rates = listing(d["rate"], loans, "{k} {v}%")
        risks = listing(d["risk"], loans)
        caps = listing(d["cap"], loans, "{k} {v}")
        rows = [[k, f"{number_text(d['rate'][k])}%", d["risk"][k], d["cap"][k]] for k in loans]
        money = ", ".join(f"${thousands(1000 * d['cap'][k])} for {k}" for k in loans)
        return {"caps": caps, "d": d, "fund": fund, "goals": goals, "money": money, "rates": rates, "risks": risks, "rows":
                rows}
