"""The layer rules of docs/architecture.md, checked on every import statement of the package (lazy ones too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import gym_integrity

PACKAGE = Path(gym_integrity.__file__).parent

#: Modules at the package's top level that form the core every layer may use.
CORE = {"protocol", "checks", "spaces", "extract", "infotree", "datacheck", "seeding", "answer_cost"}

#: What each layer may import of ours besides itself and the core (docs/architecture.md, "The layers").
ALLOWED = {
    "core": set(),
    "wrappers": set(),
    "services": set(),
    "envs": {"services", "wrappers.stack"},
    "registration": {"wrappers"},
    "vector": {"wrappers"},
    "testing": {"services"},
    "audit": {"registration", "envs.base", "testing", "integrations.openenv.client"},
    "integrations": {"registration", "vector"},
    "eval": {"registration"},
}


def _layer(module: str) -> str:
    top = module.split(".")[1] if "." in module else ""
    return "core" if top in CORE else top


def _allows(layer: str, target: str) -> bool:
    if target == "gym_integrity":
        return True  # the package root: importing any submodule runs it anyway (it registers the ids)
    target_layer = _layer(target)
    if target_layer in (layer, "core"):
        return True
    dotted = target.split(".", 1)[1] if "." in target else ""
    return any(dotted == rule or dotted.startswith(rule + ".") or target_layer == rule
               for rule in ALLOWED[layer])


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("gym_integrity"):
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names if a.name.startswith("gym_integrity"))
    return found


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(("gym_integrity", *path.relative_to(PACKAGE).with_suffix("").parts))
        out.append((module.removesuffix(".__init__"), path))
    return out


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_each_layer_imports_only_what_the_architecture_allows(layer):
    modules = [(m, p) for m, p in _modules() if _layer(m) == layer]
    assert modules, f"no module in layer {layer!r}: the table is stale"
    broken = [f"{p.relative_to(PACKAGE)}:{line} imports {target}"
              for m, p in modules for line, target in _imports(p) if not _allows(layer, target)]
    assert broken == []


def test_every_module_belongs_to_a_layer_or_is_a_front_door():
    # the package's __init__, the command line, and gym_integrity.ray (the name the [ray] extra is used by; its
    # code is integrations/ray.py) may import anything
    front_doors = {"", "cli", "__main__", "ray"}
    unknown = sorted(m for m, _ in _modules() if _layer(m) not in ALLOWED and _layer(m) not in front_doors)
    assert unknown == []


def test_the_rule_catches_a_forbidden_import(tmp_path):
    """The check itself can fail: a wrapper importing a service is refused."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from gym_integrity.services.pool import get_pool\n", encoding="utf-8")
    assert [not _allows("wrappers", target) for _, target in _imports(bad)] == [True]


def test_the_readme_and_architecture_layouts_name_every_part_of_the_tree():
    root = PACKAGE.parent
    parts = sorted({p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
                   | {p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__")})
    for doc in ("README.md", "docs/architecture.md"):
        text = (root / doc).read_text(encoding="utf-8")
        assert [name for name in parts if name not in text] == [], doc
