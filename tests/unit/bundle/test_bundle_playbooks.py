"""Where the offline bundle enters the play chain: its checks run in the preflight phase (before any change), and
its package sources are set before the first phase that installs packages (the cluster play installs Open MPI)."""

from __future__ import annotations

import re

import yaml

from sccnlp.paths import collection_root

ROOT = collection_root()


def test_sources_come_before_every_installing_phase() -> None:
    site = yaml.safe_load((ROOT / "playbooks" / "site.yml").read_text())
    order = [_stem(entry["ansible.builtin.import_playbook"]) for entry in site]
    assert order.index("sources") < order.index("cluster") < order.index("storage") < order.index("runtime")
    assert order.index("preflight") < order.index("sources")


def test_the_preflight_checks_the_bundle_first() -> None:
    plays = yaml.safe_load((ROOT / "playbooks" / "preflight.yml").read_text())
    loops = [task.get("loop") for play in plays for task in play.get("tasks") or [] if task.get("loop")]
    # A loop is a list, or an expression whose first quoted name is the first role it runs.
    firsts = [loop[0] if isinstance(loop, list) else re.findall(r"'(\w+)'", loop)[0] for loop in loops]
    assert "bundle_source" in firsts, loops


def test_knobs_carry_the_bundle_setting() -> None:
    knobs = yaml.safe_load((ROOT / "playbooks" / "knobs.yml").read_text())
    facts = knobs[0]["tasks"][0]["ansible.builtin.set_fact"]
    assert facts["scc_bundle_src"] == "{{ scc_bundle_src | default('') }}"
    assert facts["scc_bundle_dir"] == ("{{ scc_bundle_dir | default('/var/lib/scc-bundle' if scc_bundle_src "
                                       "| default('') | length > 0 else '') }}")


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(".yml")
