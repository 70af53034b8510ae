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

from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import Family, exceed, register
from solvers.ir import Model, number_text


@register
class CashFlowMatching(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 4x3 / 5x4 / 6x5 bonds x years by difficulty, bond names drawn from the domain's pool (``spread``,
        # ``drawn_names``); the years stay in order.
        bonds = drawn_names(rng, self.vocab[domain]["bonds"], spread(rng, 3 + difficulty, 2), "Bond")
        years = [f"Year{k}" for k in range(1, 1 + spread(rng, 2 + difficulty, 2))]
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
        m = self.builder(data)
        bonds, years = m.elements("bonds", "years")
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

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        bonds, years = data["bonds"], data["years"]
        desc = "; ".join(
            f"{b}: price {number_text(data['price'][b])}, coupon {number_text(data['coupon'][b])} per year, matures at the end of year {number_text(data['maturity'][b])}, at most {number_text(data['cap'][b])} available"
            for b in bonds
        )
        owed = listing(data["liability"], years, "{v} in {k}")
        rule = f"Each bond has a face value of 100, paid back in its maturity year together with that year's coupon; coupons are paid at the end of every year up to maturity. Surplus cash earns {number_text(data['rate'])}% per year until the next year. Fractional bond amounts are allowed."
        header = ["Bond", "Price ($)", "Coupon ($/yr)", "Maturity year", "Available"]
        rows = [[b, data["price"][b], data["coupon"][b], data["maturity"][b], data["cap"][b]] for b in bonds]
        return {"desc": desc, "header": header, "owed": owed, "rows": rows, "rule": rule}
