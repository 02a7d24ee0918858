"""The env contract in code: a test-only fourth env (tests/support/fourth_env.py) joins through the public API and passes the audit.

tests/test_conformance.py and tests/audit/test_registered.py run it with the
package's own ids; here: the registration API's rules, the audit of the fourth
env in-process and from the command line (whose audit processes must register
it themselves), and the hooks protocol on the real envs.
"""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import fourth_env
import gym_integrity
from gym_integrity import AuditHooks, EnvEntry, Sweep, TextEnv, register_env
from gym_integrity.audit import check_integrity, probe_names
from gym_integrity.cli import main
from gym_integrity.registration import env_entry


def test_the_fourth_env_is_stacked_and_known_to_the_audit_through_its_entry():
    assert env_entry("TinySum-v0") == fourth_env.ENTRY  # equal: a test may register the entry again (idempotent)
    assert [w.name for w in gym.spec("TinySum-v0").additional_wrappers] == [
        "MaxStepsTruncation", "HideInfoKeys", "TerminalFreeze"]
    env = gym.make("TinySum-v0")
    env.reset(seed=3)
    gold = env.unwrapped.gold_answers()[0]
    wrong = env.step("<answer>-1</answer>")
    again = env.step(f"<answer>{gold}</answer>")  # the exploit the stack stops: answering again after the end
    assert wrong[1] == again[1] == 0.0 and again[4]["integrity"]["frozen"]
    assert "privileged" not in wrong[4]
    raw = env.unwrapped
    raw.reset(seed=3)
    assert raw.step("<answer>-1</answer>")[1] == 0.0 and raw.step(f"<answer>{gold}</answer>")[1] == 1.0


def test_the_fourth_env_passes_check_integrity_in_process():
    report = check_integrity("TinySum-v0")
    assert [r.probe for r in report.results] == probe_names()
    assert report.verdict.value == "pass", [(r.probe, r.summary) for r in report.failures]


def test_the_cli_audits_the_fourth_env_in_processes_that_must_register_it(tmp_path, capsys):
    # Each audited target runs in a process forked from a server that imported only the package: the
    # target carries the entry, and the process registers it before gym.make.
    path = tmp_path / "tinysum.json"
    code = main(["audit", "TinySum-v0", "--compare", "--no-progress", "--seeds", "0", "--json", str(path)])
    reports = {(r["env_id"], r["raw"]): r for r in json.loads(path.read_text())["reports"]}
    assert code == 0, capsys.readouterr().out
    assert reports[("TinySum-v0", False)]["verdict"] == "pass"
    raw = reports[("TinySum-v0", True)]
    assert raw["verdict"] == "fail" and raw["error"] is None
    assert {r["probe"] for r in raw["results"] if r["status"] == "failed"} == {
        "rescore_after_end", "inert_after_end", "reference_leakage", "failed_reset_keeps_end"}


def test_registering_is_idempotent_and_refuses_a_taken_id():
    register_env(fourth_env.ENTRY)  # a re-import
    register_env(EnvEntry(**{**vars(fourth_env.ENTRY)}))  # an equal entry, e.g. unpickled in an audit process
    with pytest.raises(ValueError, match=r"^register_env: 'TinySum-v0' is already registered with other facts"):
        register_env(EnvEntry("TinySum-v0", "fourth_env:TinySumEnv", "another description"))
    with pytest.raises(ValueError, match=r"^register_env: 'CartPole-v1' is already a gymnasium id"):
        register_env(EnvEntry("CartPole-v1", "fourth_env:TinySumEnv", "not cart-pole"))
    with pytest.raises(TypeError, match=r"^register_env entry must be an EnvEntry"):
        register_env({"id": "X-v0"})
    assert "CartPole-v1" not in {e.id for e in gym_integrity.env_entries()}


@pytest.mark.parametrize("kwargs, kind, prefix", [
    ({"entry_point": "fourth_env.TinySumEnv"}, ValueError, "EnvEntry.entry_point"),
    ({"id": ""}, ValueError, "EnvEntry.id"),
    ({"needs_judge": 1}, TypeError, "EnvEntry.needs_judge"),
    ({"audit_variants": [("a", {})]}, TypeError, "EnvEntry.audit_variants"),
    ({"audit_variants": {"a": 3}}, TypeError, "EnvEntry.audit_variants['a']"),
    ({"audit_variants": {"a": {}}, "judged_variant": "b", "needs_judge": True}, ValueError, "EnvEntry.judged_variant"),
    ({"audit_variants": {"a": {}}, "judged_variant": "a"}, ValueError, "EnvEntry.judged_variant"),
    ({"sweep": "dataset"}, TypeError, "EnvEntry.sweep"),
    ({"audit_preload": "numpy"}, TypeError, "EnvEntry.audit_preload"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_an_entry_follows_the_one_error_rule(kwargs, kind, prefix):
    fields = {"id": "Bad-v0", "entry_point": "fourth_env:TinySumEnv", "description": "bad", **kwargs}
    with pytest.raises(kind, match=rf"^{prefix.replace('[', '.').replace(']', '.')}"):
        EnvEntry(**fields)


def test_an_entry_keeps_its_own_copy_of_the_variants():
    variants = {"small": {"high": 199}}
    entry = EnvEntry("Copy-v0", "fourth_env:TinySumEnv", "copy", audit_variants=variants)
    variants["small"]["high"] = 5
    assert entry.audit_variants == {"small": {"high": 199}}
    with pytest.raises(ValueError, match=r"^Sweep.values must be 'module:function'"):
        Sweep("dataset", "datasets")


def test_an_unregistered_subclass_still_says_where_stack_switches_go():
    class Unregistered(fourth_env.TinySumEnv):
        pass

    with pytest.raises(TypeError, match=r"use gym_integrity\.make\('<id>', max_steps=\.\.\.\)"):
        Unregistered(max_steps=3)
    assert isinstance(Unregistered(), TextEnv)


def test_the_hooks_protocol_needs_all_three_hooks():
    """A tool env defines all three; a plain text env only gold_answers (the auditor wraps its answers itself)."""
    kinds = set()
    for entry in gym_integrity.env_entries():
        env = gym.make(entry.id)
        raw = env.unwrapped
        has_all = all(callable(getattr(raw, name, None))
                      for name in ("gold_answers", "audit_answer_action", "audit_non_answer_action"))
        assert isinstance(raw, AuditHooks) is has_all, entry.id
        kinds.add(has_all)
        env.close()
    assert kinds == {True, False}
