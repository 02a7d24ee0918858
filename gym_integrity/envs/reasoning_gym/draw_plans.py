"""Where a generator's draw plan (``draw.DrawPlan``) comes from: shipped with the package, else built at first reset.

Building a plan reads ``SAMPLE_ITEMS`` items (and up to ``EXTRA_ITEMS`` more for
rare labels): a minute for a slow generator. So the plans of every single-dataset
default configuration (what ``gym.make("ReasoningGym-v0", dataset=name)`` makes,
strict scoring) are built offline and shipped in ``draw_plans.json``. At the
first reset of a process :func:`plan_for` takes the shipped plan when

* the file's fingerprint matches: the installed reasoning-gym version and the
  draw rule's parameters (``draw.py``'s constants and ``PLAN_FORMAT``), and
* its probe matches: ``PROBE_ITEMS`` of the plan's sample indices, generated
  again, are drawable or not and carry the labels they had when it was built
  (this checks the generator, the tasks' draw filters and strict grading of
  the items' own examples, at the cost of a few generator calls);

else it builds the plan as the builder does (same function, same indices), so a
seed gives the same item whether the plan was shipped or built. A generator whose
items are not a function of their index (codeio's differ from process to process;
knight_swap's and polynomial_multiplication's with ``PYTHONHASHSEED``) has nothing
to probe: the builder finds it (processes with other hash seeds see other items)
and ships its plan with no probe, marked
``"reproducible": false``, and it is used as shipped (a plan built at runtime
would be as much this process's own).
``tests/envs/reasoning_gym/test_draw_plans.py`` rebuilds several and compares:
the staleness check. Rebuild the file (nice'd; about half an hour on two cores)::

    python -m gym_integrity.envs.reasoning_gym.plan_builder --jobs 2

``plan_builder NAME ...`` rebuilds only those datasets (the others are kept if the
fingerprint still matches).
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from gym_integrity.envs.reasoning_gym import draw
from gym_integrity.envs.reasoning_gym.draw import DrawPlan, Pays, label_of
from gym_integrity.workers import ProcessCache

__all__ = ["PLANS_FILE", "build", "fingerprint", "from_json", "labels_for", "plan_for", "shipped_plan", "to_json"]

PLANS_FILE = Path(__file__).with_name("draw_plans.json")
#: Bumped when the plan's meaning changes in a way the constants below do not show (the file is then stale).
PLAN_FORMAT = 2  # 2: labels are the scorer's classes (DrawPlan.classes, spans)
#: Sample indices a shipped plan's probe generates again at its first use.
PROBE_ITEMS = 3
_RULE_CONSTANTS = (
    "SAMPLE_ITEMS",
    "EXTRA_ITEMS",
    "POOL_ITEMS",
    "FEW_LABELS",
    "TARGET_MARGIN",
    "MAX_INFLATION",
    "TEMPLATE_SHARE",
    "OPTION_SHARE",
    "SELECTION_SHARE",
    "_SAMPLE_SEED",
)
REBUILD = "python -m gym_integrity.envs.reasoning_gym.plan_builder --jobs 2"

_PLANS: ProcessCache[tuple[str, str], DrawPlan] = ProcessCache("reasoning-gym draw plans", max_items=256)
_LABELS: ProcessCache[tuple[str, str], dict[int, str | None]] = ProcessCache("reasoning-gym draw labels", max_items=64)

Sample = Callable[[int], Mapping[str, Any] | None]


def fingerprint() -> dict[str, str]:
    """What a shipped plan holds for: the installed reasoning-gym and the draw rule's parameters."""
    from importlib.metadata import version

    rule = json.dumps({"format": PLAN_FORMAT, **{name: getattr(draw, name) for name in _RULE_CONSTANTS}})
    return {"reasoning_gym": version("reasoning-gym"), "rule": hashlib.sha256(rule.encode()).hexdigest()[:16]}


def plan_for(key: str, scoring: str, sample: Sample, size: int, pays: Pays | None = None) -> DrawPlan:
    """The generator's plan, once per process: shipped (strict scoring's), else built. ``sample(index)`` is the
    item at that index if its policy draws it, else None; ``pays`` is strict scoring's full credit (``draw.Pays``)."""

    def make() -> DrawPlan:
        shipped = shipped_plan(key, sample) if scoring == "strict" else None
        return shipped if shipped is not None else build(sample, size, pays)

    return _PLANS.get_or_create((key, scoring), make)


def labels_for(key: str, scoring: str) -> dict[int, str | None]:
    """The labels of the indices walks visited, per generator and process (None: not drawn)."""
    return _LABELS.get_or_create((key, scoring), dict)


def build(sample: Sample, size: int, pays: Pays | None = None) -> DrawPlan:
    """The plan, built from the generator's items at the fixed sample indices (each generated once: a small size
    repeats indices, and an item is a function of its index); ``pays`` joins labels into the scorer's classes."""
    seen: dict[int, Mapping[str, Any] | None] = {}

    def once(index: int) -> Mapping[str, Any] | None:
        if index not in seen:
            seen[index] = sample(index)
        return seen[index]

    indices = sample_indices(size)[: draw.SAMPLE_ITEMS]
    plan = draw.build_plan([(index, item) for index in indices if (item := once(index)) is not None], pays)
    return _fill_pools(plan, once, size, pays)


def sample_indices(size: int) -> list[int]:
    """The indices a plan reads, in order: a fixed seed's draws (PCG64's stream is the same on every machine)."""
    import numpy as np

    rng = np.random.default_rng(draw._SAMPLE_SEED)
    return [int(i) for i in rng.integers(size, size=draw.SAMPLE_ITEMS + draw.EXTRA_ITEMS)]


def _fill_pools(plan: DrawPlan, sample: Sample, size: int, pays: Pays | None = None) -> DrawPlan:
    """The plan with up to ``POOL_ITEMS`` items for each stratum label the sample shows once or twice, looked for in
    the items after it."""
    pools = {label: list(indices) for label, indices in plan.pools.items()}
    short = {label for label, indices in pools.items() if len(indices) < 3}  # seen once or twice: rare
    for index in sample_indices(size)[draw.SAMPLE_ITEMS :]:
        if not short:
            break
        label = probe(plan, sample, index, pays)[1]
        if label in short:
            pools[label].append(index)
            if len(pools[label]) >= draw.POOL_ITEMS:
                short.discard(label)
    return replace(plan, pools={label: tuple(indices) for label, indices in pools.items()})


def probe(plan: DrawPlan, sample: Sample, index: int, pays: Pays | None = None) -> tuple[bool, str | None]:
    """Whether the plan draws the item at ``index`` (its policy does and it is no echo), and its label (class) if
    so."""
    item = sample(index)
    if item is None or plan.echoes(item):
        return False, None
    return True, plan.class_of(label_of(item.get("answer")), item, sample, pays)


def shipped_plan(key: str, sample: Sample) -> DrawPlan | None:
    """The shipped plan for this generator configuration, if there is one and its probe matches."""
    entry = _shipped().get(key)
    if entry is None:
        return None
    plan = from_json(entry["plan"])
    for index, drawable, label in entry["probe"]:
        if probe(plan, sample, index) != (drawable, label):
            warnings.warn(
                f"gym_integrity: the shipped draw plan for {json.loads(key)['dataset']} does not match its generator "
                f"(item {index}); building it at this reset. Rebuild {PLANS_FILE.name}: {REBUILD}",
                RuntimeWarning,
                stacklevel=2,
            )
            return None
    return plan


@cache
def _shipped() -> dict[str, dict[str, Any]]:
    """The shipped plans by generator key: none if the file is missing or was built for another fingerprint."""
    if not PLANS_FILE.exists():
        return {}
    data = json.loads(PLANS_FILE.read_text(encoding="utf-8"))
    if data.get("fingerprint") != fingerprint():
        warnings.warn(
            f"gym_integrity: the shipped draw plans were built for {data.get('fingerprint')}, not {fingerprint()}: "
            f"plans are built at each generator's first reset (a minute for a slow one). Rebuild: {REBUILD}",
            RuntimeWarning,
            stacklevel=3,
        )
        return {}
    return {entry["key"]: entry for entry in data["plans"].values()}


def to_json(plan: DrawPlan) -> dict[str, Any]:
    """The plan as JSON values (floats round-trip exactly)."""
    return {
        "k": plan.k,
        "cap": plan.cap,
        "strata": [list(stratum) for stratum in plan.strata],
        "template": sorted(plan.template),
        "filters_echo": plan.filters_echo,
        "echo_share": plan.echo_share,
        "sample_shares": [list(share) for share in plan.sample_shares],
        "pools": {label: list(indices) for label, indices in sorted(plan.pools.items())},
        # Only where labels were joined: every other plan reads as before (plan_builder rebuilds only what changed).
        **({"classes": dict(sorted(plan.classes.items()))} if plan.classes else {}),
        **({"spans": [list(span) for span in plan.spans]} if plan.spans else {}),
    }


def from_json(data: Mapping[str, Any]) -> DrawPlan:
    """The plan :func:`to_json` wrote."""
    return DrawPlan(
        k=int(data["k"]),
        cap=float(data["cap"]),
        strata=tuple((label, float(share)) for label, share in data["strata"]),
        template=frozenset(data["template"]),
        filters_echo=bool(data["filters_echo"]),
        echo_share=float(data["echo_share"]),
        sample_shares=tuple((label, float(share)) for label, share in data["sample_shares"]),
        pools={label: tuple(indices) for label, indices in data["pools"].items()},
        classes=dict(data.get("classes", {})),
        spans=tuple(
            (name, below, float(least), float(most), above, int(low), int(high))
            for name, below, least, most, above, low, high in data.get("spans", ())
        ),
    )
