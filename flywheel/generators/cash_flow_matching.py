"""Cash-flow matching / bond dedication (LP, multi-period balance): buy bonds (price per 100 face, yearly coupon,
maturity year, at most a cap of each) so that coupons, redemptions and reinvested surplus cash meet every year's
liability at least cost: ``cash[t] = (1 + r) cash[t-1] + inflow[t] - liability[t] >= 0``.

Feasible by construction: the longest bond alone, bought at its cap, pays more than every liability in every year.
Infeasible variant: the last liability exceeds all inflows of all bonds at their caps, compounded over the horizon.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, names, table
from flywheel.generators.base import Family, exceed, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, number_text

_DOMAINS: dict[str, dict[str, Any]] = {
    "pension fund": {"bonds": ["TreasA", "TreasB", "TreasC", "AgencyD", "AgencyE", "CorpF", "CorpG", "CorpH",
                               "MuniI", "MuniJ"], "who": "a pension fund", "owed": "pension payments"},
    "lottery payout": {"bonds": ["Strip1", "Strip2", "Note3", "Note4", "Bond5", "Bond6", "Bond7", "Bond8",
                                 "Bond9", "Bond10"], "who": "a state lottery", "owed": "annual prize instalments"},
    "insurance reserve": {"bonds": ["GiltA", "GiltB", "GiltC", "CovD", "CovE", "SupraF", "SupraG", "CorpH",
                                    "CorpI", "CorpJ"], "who": "an insurer", "owed": "expected claim payments"},
}


@register
class CashFlowMatching(Family):
    name = "cash_flow_matching"
    problem_class = "LP"
    sectors = {"pension fund": "finance", "lottery payout": "finance", "insurance reserve": "finance"}
    techniques = ("multi_period_balance", "ratio_percentage")
    template_styles = (("plain",), ("table",), ("story",), ("plain",))
    reorder_keys = ("bonds",)

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        bonds = names(_DOMAINS[domain]["bonds"], 3 + difficulty, "Bond")
        years = [f"Year{k}" for k in range(1, 3 + difficulty)]
        T = len(years)
        maturity = {b: int(rng.integers(1, T + 1)) for b in bonds}
        maturity[bonds[-1]] = T
        coupon = {b: int(rng.integers(2, 9)) for b in bonds}
        price = {b: int(rng.integers(90, 111)) for b in bonds}
        cap = {b: int(rng.integers(50, 200)) for b in bonds}
        last = bonds[-1]
        liability = {y: int(coupon[last] * cap[last] * rng.uniform(0.3, 0.9)) for y in years[:-1]}
        liability[years[-1]] = int((coupon[last] + 100) * cap[last] * rng.uniform(0.3, 0.9))
        rate = int(rng.integers(1, 5))
        return {"bonds": bonds, "years": years, "maturity": maturity, "coupon": coupon, "price": price,
                "cap": cap, "liability": liability, "rate": rate}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        T = len(data["years"])
        total = sum(data["cap"][b] * (data["coupon"][b] * data["maturity"][b] + 100) for b in data["bonds"])
        bound = math.ceil(total * (1 + data["rate"] / 100) ** T)
        return exceed(data, "liability", data["years"][-1], bound, rng.integers(1, 50))

    def _inflow(self, data: dict[str, Any], b: str, k: int) -> int:
        m = data["maturity"][b]
        return 0 if k > m else data["coupon"][b] + (100 if k == m else 0)

    def build(self, data: dict[str, Any]) -> Model:
        m = ModelBuilder("cash_flow_matching")
        bonds = m.add_set("bonds", data["bonds"], "bonds that can be bought")
        years = m.add_set("years", data["years"], "years with a liability")
        m.add_param("price", data["price"], ("bonds",), "money per 100 face", "price of one bond")
        m.add_param("coupon", data["coupon"], ("bonds",), "money per year", "yearly coupon of one bond")
        m.add_param("maturity", data["maturity"], ("bonds",), "year", "year the bond repays its 100 face")
        m.add_param("cap", data["cap"], ("bonds",), "bonds", "most bonds of a kind available")
        m.add_param("liability", data["liability"], ("years",), "money", "payment due in a year")
        m.add_param("rate", data["rate"], (), "percent", "yearly reinvestment rate of surplus cash")
        x = m.add_vars("buy", ("bonds",), description="bonds bought", unit="bonds")
        cash = m.add_vars("surplus", ("years",), description="cash carried to the next year", unit="money")
        m.con_group("balance", ("years",), "inflows plus reinvested surplus cover the liability")
        for k, y in enumerate(years, start=1):
            terms = [(x[(b,)], self._inflow(data, b, k)) for b in bonds] + [(cash[(y,)], -1)]
            if k > 1:
                terms.append((cash[(years[k - 2],)], 1 + data["rate"] / 100))
            m.add_constr("balance", (y,), terms, "==", data["liability"][y])
        m.add_constrs("cap", ("bonds",), "availability of each bond", lambda b: ([(x[(b,)], 1)], "<=", data["cap"][b]))
        m.set_objective("minimize", [(x[(b,)], data["price"][b]) for b in bonds], description="purchase cost")
        return m.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        n = number_text
        v = _DOMAINS[domain]
        bonds, years = data["bonds"], data["years"]
        desc = "; ".join(f"{b}: price {n(data['price'][b])}, coupon {n(data['coupon'][b])} per year, matures at the end of "
                         f"year {n(data['maturity'][b])}, at most {n(data['cap'][b])} available" for b in bonds)
        owed = listing(data["liability"], years, "{v} in {k}")
        rule = (f"Each bond has a face value of 100, paid back in its maturity year together with that year's "
                f"coupon; coupons are paid at the end of every year up to maturity. Surplus cash earns "
                f"{n(data['rate'])}% per year until the next year. Fractional bond amounts are allowed.")
        if template == 0:
            return (f"{v['who'].capitalize()} must fund {v['owed']} of {owed} (dollars) with bonds {join(bonds)}. "
                    f"{desc}. {rule} Minimise the cost of the bonds bought today.")
        if template == 1:
            header = ["Bond", "Price ($)", "Coupon ($/yr)", "Maturity year", "Available"]
            rows = [[b, data["price"][b], data["coupon"][b], data["maturity"][b], data["cap"][b]] for b in bonds]
            return (f"Dedicated bond portfolio.\n\n{table(header, rows)}\n\nLiabilities ($): {owed}. {rule} "
                    "Find the cheapest portfolio that meets every liability.")
        if template == 2:
            return (f"The treasurer of {v['who']} wants to lock in {v['owed']}: {owed} dollars. Rather than "
                    f"gamble on rates, the plan is to buy bonds whose cash flows cover them. On offer: {desc}. "
                    f"{rule} What is the least it must spend?")
        return (f"Cash-flow matching over {len(years)} years. Bonds: {desc}. Liabilities: {owed}. {rule} Objective: "
                "minimum purchase cost.")
