"""Product mix with tiered overtime (LP): choose how much of each product to make, where labour beyond the regular
hours is paid more and more in tiers (regular, overtime, weekend), within a material limit, each product's market
and a contracted minimum of one product.

The labour cost is piecewise linear and convex in the hours worked (each tier dearer than the one before), so it
needs no binaries: one hour variable per tier, each capped at the tier's length, their sum equal to the hours the
mix takes (minutes per unit / 60). A maximising LP fills the cheap tiers first on its own. Feasible by
construction: the contracted minimum takes at most 40% of all labour hours and half the material. Infeasible
variant: the contracted minimum needs more labour minutes than the three tiers together provide.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._phrasing import minutes
from flywheel.generators._text import drawn_names, listing, spread, table
from flywheel.generators.base import Family, register
from solvers.ir import Model, number_text

_TIERS = ("regular", "overtime", "weekend")


@register
class OvertimeProductMix(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 3 / 4 / 5 products by difficulty, names drawn from the domain's pool (``spread``,
        # ``drawn_names``).
        products = drawn_names(rng, self.vocab[domain]["products"], spread(rng, 2 + difficulty, 2), "Product")
        labour = {p: int(rng.choice([6, 10, 12, 15, 20, 30, 45])) for p in products}  # minutes per unit
        wage0 = int(rng.integers(15, 26))
        wage = {"regular": wage0, "overtime": wage0 + int(rng.integers(5, 12)),
                "weekend": 2 * wage0 + int(rng.integers(1, 8))}
        # Margins worth between 1.1 regular wages and 2.4 regular wages per labour hour: some overtime pays.
        margin = {p: max(1, int(labour[p] / 60 * wage0 * rng.uniform(1.1, 2.4))) for p in products}
        material = {p: int(rng.integers(1, 8)) for p in products}
        hours = {"regular": int(rng.integers(8, 20)) * 10, "overtime": int(rng.integers(2, 6)) * 10,
                 "weekend": int(rng.integers(1, 4)) * 8}
        total = sum(hours.values())
        first = products[0]
        minimum = max(1, int(total * 60 / labour[first] * rng.uniform(0.1, 0.4)))
        market = {p: int(total * 60 / labour[p] * rng.uniform(0.2, 0.6)) + (minimum if p == first else 0)
                  for p in products}
        available = int(max(2 * minimum * material[first], sum(material[p] * market[p] for p in products)
                            * rng.uniform(0.4, 0.8)))
        return {"products": products, "labour": labour, "margin": margin, "material": material, "market": market,
                "available": available, "hours": hours, "wage": wage, "min_product": first, "minimum": minimum}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        most = sum(data["hours"].values()) * 60 // data["labour"][data["min_product"]]
        extra = int(most + rng.integers(1, 20))
        return {**data, "minimum": extra,
                "market": {**data["market"], data["min_product"]: max(extra, data["market"][data["min_product"]])}}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (products,) = b.elements("products")
        tiers = b.add_set("tiers", list(_TIERS), "labour tiers, each dearer than the one before")
        b.add_param("labour", data["labour"], ("products",), "minutes per unit", "labour of one unit")
        b.add_param("margin", data["margin"], ("products",), "dollars per unit", "margin before labour")
        b.add_param("material", data["material"], ("products",), "per unit", "material of one unit")
        b.add_param("market", data["market"], ("products",), "units", "most units that can be sold")
        b.add_param("hours", data["hours"], ("tiers",), "hours", "length of a labour tier")
        b.add_param("wage", data["wage"], ("tiers",), "dollars per hour", "wage of an hour in a tier")
        b.add_param("available", data["available"], (), "", "material available")
        b.add_param("minimum", data["minimum"], (), "units", "contracted minimum of one product")
        x = b.add_vars("make", ("products",), description="units made", unit="units")
        h = b.add_vars("hours_in", ("tiers",), description="labour hours worked in a tier", unit="hours")
        b.con_group("labour", (), "hours over the tiers equal the hours the mix takes (minutes / 60)")
        b.add_constr("labour", (), [(x[(p,)], data["labour"][p] / 60) for p in products]
                     + [(h[(t,)], -1) for t in tiers], "==", 0)
        b.con_group("tier_length", ("tiers",), "no tier beyond its length")
        for t in tiers:
            b.add_constr("tier_length", (t,), [(h[(t,)], 1)], "<=", data["hours"][t])
        b.con_group("material", (), "material within what is available")
        b.add_constr("material", (), [(x[(p,)], data["material"][p]) for p in products], "<=", data["available"])
        b.con_group("market", ("products",), "no product beyond its market")
        for p in products:
            b.add_constr("market", (p,), [(x[(p,)], 1)], "<=", data["market"][p])
        b.con_group("contract", (), "contracted minimum of one product")
        b.add_constr("contract", (), [(x[(data["min_product"],)], 1)], ">=", data["minimum"])
        b.set_objective("maximize", [(x[(p,)], data["margin"][p]) for p in products]
                        + [(h[(t,)], -data["wage"][t]) for t in tiers], description="margin minus wages")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        products = data["products"]
        d, what = data, v["what"]
        hrs, wage = d["hours"], d["wage"]
        pay = f"The {v['staff']} can work {number_text(hrs['regular'])} regular hours at ${number_text(wage['regular'])} an hour, then up to {number_text(hrs['overtime'])} overtime hours at ${number_text(wage['overtime'])} an hour, then up to {number_text(hrs['weekend'])} weekend hours at ${number_text(wage['weekend'])} an hour."
        hard = f"Only {number_text(d['available'])} {v['munit']} of {v['material']} are available, and a contract requires at least {number_text(d['minimum'])} {what} of {d['min_product']}."
        margins = listing(d["margin"], products, "{k} ${v}")
        labour = listing(d["labour"], products, "{k} {v} minutes")
        mat = listing(d["material"], products, "{k} {v} " + v["munit"])
        market = listing(d["market"], products, "{v} {k}")
        header = [
            "Product",
            "Margin ($/unit)",
            "Labour (min/unit)",
            f"{v['material'].capitalize()} ({v['munit']}/unit)",
            "Market (units)",
        ]
        rows = [[p, d["margin"][p], d["labour"][p], d["material"][p], d["market"][p]] for p in products]
        tiers = table(["Labour tier", "Hours available", "Wage ($/hour)"], [[t, hrs[t], wage[t]] for t in _TIERS])
        takes = ", ".join(f"{p} {minutes(d['labour'][p] / 60)}" for p in products)
        return {"hard": hard, "header": header, "labour": labour, "margins": margins, "market": market, "mat": mat, "pay":
                pay, "rows": rows, "takes": takes, "tiers": tiers, "what": what}
