"""The layer rules of docs/architecture.md, checked on every import statement of the package (lazy ones too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import gym_integrity

PACKAGE = Path(gym_integrity.__file__).parent

#: Modules at the package's top level that form the core every layer may use.
CORE = {"protocol", "checks", "exceptions", "spaces", "infotree", "datacheck", "seeding"}

#: What each layer may import of ours besides itself and the core (docs/architecture.md, "The layers").
ALLOWED = {
    "core": set(),
    "wrappers": set(),
    "workers": set(),
    "grading": {"workers"},
    "services": {"grading", "workers"},
    "envs": {"grading", "services", "workers", "wrappers.stack"},
    "registration": {"wrappers", "envs.entry"},
    "vector": {"wrappers"},
    "openai_stub": {"grading", "services"},
    "audit": {"registration", "envs.base", "grading.numbers", "openai_stub", "integrations.openenv.client", "workers"},
    "integrations": {"registration", "vector", "workers"},
    "ray": {"registration", "vector", "workers"},
    "eval": {"registration", "rollout"},
    "rollout": {"registration", "vector", "services.openai_call"},
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
    # the package's __init__ and the command line may import anything
    front_doors = {"", "cli", "__main__"}
    unknown = sorted(m for m, _ in _modules() if _layer(m) not in ALLOWED and _layer(m) not in front_doors)
    assert unknown == []


def test_the_rule_catches_a_forbidden_import(tmp_path):
    """The check itself can fail: a wrapper importing a service is refused."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from gym_integrity.workers import get_pool\n", encoding="utf-8")
    assert [not _allows("wrappers", target) for _, target in _imports(bad)] == [True]


def test_the_architecture_layout_names_every_part_of_the_tree_and_the_readme_links_it():
    root = PACKAGE.parent
    parts = sorted({p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
                   | {p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__")})
    text = (root / "docs/architecture.md").read_text(encoding="utf-8")
    assert [name for name in parts if name not in text] == []
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert "](docs/architecture.md)" in readme and "\ngym_integrity/\n" not in readme  # the tree lives in one place


# --------------------------------------------------------------------------- no import cycle (issue 24)


def _module_names() -> set[str]:
    return {m for m, _ in _modules()}


def _target(node: ast.ImportFrom | ast.Import, alias: ast.alias, known: set[str]) -> str | None:
    """The module of ours an import names: ``from pkg import sub`` names the submodule when there is one."""
    if isinstance(node, ast.Import):
        return alias.name if alias.name.startswith("gym_integrity") else None
    base = node.module or ""
    if node.level or not base.startswith("gym_integrity"):
        return None
    sub = f"{base}.{alias.name}"
    return sub if sub in known else base


def import_graph() -> dict[str, set[str]]:
    """Each module of the package -> the modules of ours it imports, at module level or inside a function."""
    known = _module_names()
    graph: dict[str, set[str]] = {}
    for module, path in _modules():
        edges = graph.setdefault(module, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    target = _target(node, alias, known)
                    if target in known and target != module:
                        edges.add(target)
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (``a -> b -> ... -> a``) for each strongly connected group of modules, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def connect(v: str) -> None:  # Tarjan's algorithm; the graph is a few hundred nodes, recursion is fine
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return sorted(_cycle_in(graph, group) for group in groups)


def _cycle_in(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest cycle through the group's first module, staying inside the group (breadth first)."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & group):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle in {sorted(group)}")  # a strongly connected group always has one


def test_no_import_cycle_anywhere_in_the_package(capsys):
    cycles = import_cycles(import_graph())
    lines = [" -> ".join(m.removeprefix("gym_integrity.") or "gym_integrity" for m in c) for c in cycles]
    with capsys.disabled():  # every cycle, printed even when the assertion below names them all
        for line in lines:
            print(f"import cycle: {line}")
    assert lines == [], "import cycles (function-local imports count):\n" + "\n".join(lines)


def test_the_cycle_rule_catches_a_lazy_import_cycle(tmp_path):
    """The check itself can fail: two modules importing each other, one of them inside a function."""
    graph = {"gym_integrity.a": {"gym_integrity.b"}, "gym_integrity.b": {"gym_integrity.c"},
             "gym_integrity.c": {"gym_integrity.a"}, "gym_integrity.d": {"gym_integrity.a"}}
    assert import_cycles(graph) == [["gym_integrity.a", "gym_integrity.b", "gym_integrity.c", "gym_integrity.a"]]
    lazy = tmp_path / "lazy.py"
    lazy.write_text("def f():\n    from gym_integrity.wrappers import stack\n", encoding="utf-8")
    node = next(n for n in ast.walk(ast.parse(lazy.read_text())) if isinstance(n, ast.ImportFrom))
    assert _target(node, node.names[0], _module_names()) == "gym_integrity.wrappers.stack"
