"""Family specs (issue 15): the declarative half of a family in ``spec/<name>.json`` (vocabularies, metadata, the
sets and parameters ``Family.builder`` declares, Jinja question templates); bad specs fail naming the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from flywheel.generators import base
from flywheel.generators.base import FAMILIES, Family, family_names, get_family, load_spec, register
from solvers.errors import FlywheelError
from solvers.ir import Model

SPEC = {
    "problem_class": "LP",
    "techniques": ["ratio_percentage"],
    "domains": {
        "bakery": {"sector": "retail", "who": "a baker", "goods": ["Bread", "Cake"]},
        "mill": {"sector": "agriculture", "who": "a miller", "goods": ["Flour", "Bran"]},
        "dairy": {"sector": "agriculture", "who": "a dairy", "goods": ["Milk", "Cheese"]},
    },
    "sets": {"goods": "what is made"},
    "params": {"profit": {"index": ["goods"], "unit": "$", "description": "profit per unit"},
               "cap": {"from": "capacity", "unit": "units", "description": "shared capacity"}},
    "templates": [
        {"styles": ["plain"], "text": "{{ v.who|capitalize }} makes {{ join(goods) }}; profits {{ profits }}."},
        {"styles": ["table"], "text": "{{ table(['Good', 'Profit'], rows) }}\nCapacity {{ capacity }}."},
        {"styles": ["story"], "text": "In the {{ domain }}: {{ profits }}, at most {{ number_text(capacity) }}."},
        {"styles": ["units"], "text": "{{ goods|length }} goods, capacity {{ data['capacity'] }}: {{ profits }}."},
    ],
}


class _Toy(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        goods = list(self.vocab[domain]["goods"])
        return {"goods": goods, "profit": {g: int(rng.integers(1, 9)) for g in goods}, "capacity": 10}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        return data

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (goods,) = b.elements("goods")
        x = b.add_vars("make", ("goods",))
        b.add_constrs("cap", (), "capacity", lambda: ([(x[(g,)], 1) for g in goods], "<=", data["capacity"]),
                      keys=[()])
        b.set_objective("maximize", [(x[(g,)], data["profit"][g]) for g in goods])
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        return {"profits": ", ".join(f"{g} ${data['profit'][g]}" for g in data["goods"]),
                "rows": [[g, data["profit"][g]] for g in data["goods"]]}


@pytest.fixture
def spec_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(base, "SPEC_DIR", tmp_path)
    load_spec.cache_clear()
    names = set(FAMILIES)
    yield tmp_path
    for extra in set(FAMILIES) - names:
        del FAMILIES[extra]
    load_spec.cache_clear()


def _family(name: str, **attrs: Any) -> type[Family]:
    return type(name.title(), (_Toy,), {"name": name, **attrs})


def test_a_spec_sets_metadata_vocabulary_builder_and_templates(spec_dir: Path):
    (spec_dir / "toy_spec.json").write_text(json.dumps(SPEC))
    cls = register(_family("toy_spec"))
    assert cls.problem_class == "LP" and cls.techniques == ("ratio_percentage",)
    assert cls.domains == ("bakery", "mill", "dairy") and cls.sectors["bakery"] == "retail"
    assert "sector" not in cls.vocab["mill"] and cls.vocab["mill"]["who"] == "a miller"
    assert cls.n_templates == 4 and cls.styles_of(1) == ("table",)
    fam = cls()
    data = fam.sample(np.random.default_rng(0), 1, "mill")
    ir = fam.build(data)
    params = {p.name: p for p in ir.params}
    assert params["cap"].values == 10.0 and params["cap"].unit == "units"  # "from": the data key differs
    assert params["profit"].values == {g: float(data["profit"][g]) for g in ("Flour", "Bran")}
    q0 = str(fam.phrase(data, 0, "mill"))
    assert q0.startswith("A miller makes Flour and Bran; profits Flour $") and q0.endswith(".")
    assert "| Good | Profit |" in str(fam.phrase(data, 1, "mill"))
    assert str(fam.phrase(data, 2, "mill")).startswith("In the mill: ")
    assert str(fam.phrase(data, 3, "mill")).startswith("2 goods, capacity 10:")
    # The spec is part of the family's code hash (its lineage): the same module with another template differs.
    other = [*SPEC["templates"][:3], {"styles": ["units"], "text": "{{ profits }}; capacity {{ capacity }}."}]
    (spec_dir / "toy_spec2.json").write_text(json.dumps({**SPEC, "templates": other}))
    assert base._code_hash(register(_family("toy_spec2"))) != base._code_hash(cls)


def test_unknown_spec_key_names_the_file_and_the_nearest_key(spec_dir: Path):
    (spec_dir / "toy_typo.json").write_text(json.dumps({**SPEC, "templtes": []}))
    with pytest.raises(FlywheelError, match="templates") as err:
        register(_family("toy_typo"))
    assert "toy_typo.json" in str(err.value)
    (spec_dir / "toy_param.json").write_text(json.dumps({**SPEC, "params": {"cap": {"unts": "x"}}}))
    with pytest.raises(FlywheelError, match="unit"):
        register(_family("toy_param"))


def test_broken_json_a_missing_sector_or_a_bad_template_fail_naming_the_file(spec_dir: Path):
    (spec_dir / "toy_json.json").write_text('{"problem_class": "LP",')
    with pytest.raises(FlywheelError, match=r"toy_json\.json: not valid JSON"):
        register(_family("toy_json"))
    doms = {d: {k: v for k, v in e.items() if k != "sector"} for d, e in SPEC["domains"].items()}
    (spec_dir / "toy_sector.json").write_text(json.dumps({**SPEC, "domains": doms}))
    with pytest.raises(FlywheelError, match="lack a 'sector'"):
        register(_family("toy_sector"))
    broken = [*SPEC["templates"][:3], {"styles": ["plain"], "text": "{{ goods "}]
    (spec_dir / "toy_syntax.json").write_text(json.dumps({**SPEC, "templates": broken}))
    cls = register(_family("toy_syntax"))
    fam = cls()
    data = fam.sample(np.random.default_rng(0), 1, "bakery")
    with pytest.raises(FlywheelError, match="template 3") as err:
        fam.phrase(data, 3, "bakery")
    assert "toy_syntax.json" in str(err.value)


def test_an_undefined_template_name_is_an_error_not_empty_text(spec_dir: Path):
    typo = [*SPEC["templates"][:3], {"styles": ["plain"], "text": "Profits {{ proftis }}."}]
    (spec_dir / "toy_undef.json").write_text(json.dumps({**SPEC, "templates": typo}))
    fam = register(_family("toy_undef"))()
    data = fam.sample(np.random.default_rng(0), 1, "dairy")
    with pytest.raises(FlywheelError, match="proftis") as err:
        fam.phrase(data, 3, "dairy")
    assert "toy_undef.json" in str(err.value)


def test_a_family_without_templates_or_question_is_refused(spec_dir: Path):
    (spec_dir / "toy_none.json").write_text(json.dumps({k: v for k, v in SPEC.items() if k != "templates"}))
    with pytest.raises(FlywheelError, match="no question templates"):
        register(_family("toy_none"))


def test_every_shipped_family_has_a_spec_and_takes_its_name_from_its_module():
    for name in family_names():
        fam = get_family(name)
        assert (base.SPEC_DIR / f"{name}.json").exists(), name
        assert type(fam).__module__ == f"flywheel.generators.{name}"
        assert fam.n_templates >= 4 and len(fam.templates) == fam.n_templates
