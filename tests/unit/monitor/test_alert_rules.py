"""The alert rules the collection ships (roles/monitoring/files/scc_rules.yml): promtool accepts them, every alert
has a `promtool test rules` case in tests/unit/monitor/rules/ in which it fires, and those cases pass (they fail
when a rule is broken: the last test breaks one)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
RULES = ROOT / "roles" / "monitoring" / "files" / "scc_rules.yml"
CASES = sorted((Path(__file__).parent / "rules").glob("*.yml"))


def _promtool(prometheus_tool: Callable[[str], str], *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([prometheus_tool("promtool"), *args], capture_output=True, text=True, cwd=cwd, timeout=120,
                          check=False)


def _alerts() -> list[str]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule["alert"] for group in groups for rule in group["rules"] if "alert" in rule]


def test_promtool_accepts_the_rules(prometheus_tool: Callable[[str], str]) -> None:
    done = _promtool(prometheus_tool, "check", "rules", str(RULES))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(_alerts()) + 1} rules found" in done.stdout, done.stdout


def test_the_issue_s_alerts_are_shipped() -> None:
    assert set(_alerts()) == {"SccNodeDown", "SccRdmaPortNotActive", "SccRdmaLinkDowned", "SccRdmaPortErrors",
                              "SccSharedStorageUnmounted", "SccGateFailing", "SccGpuXidSeen",
                              "SccTrainingHeartbeatStale"}


def test_every_alert_fires_in_a_rule_test() -> None:
    firing: set[str] = set()
    for case in CASES:
        data = yaml.safe_load(case.read_text())
        rule_files = [(case.parent / f).resolve() for f in data["rule_files"]]
        assert rule_files == [RULES], f"{case.name}: not the shipped rules"
        for test in data["tests"]:
            firing |= {t["alertname"] for t in test.get("alert_rule_test", []) if t.get("exp_alerts")}
    assert sorted(set(_alerts()) - firing) == [], "alerts without a promtool case in which they fire"


def test_the_rule_tests_pass(prometheus_tool: Callable[[str], str]) -> None:
    done = _promtool(prometheus_tool, "test", "rules", *map(str, CASES))
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert done.stdout.count("SUCCESS") == len(CASES), done.stdout


def test_a_broken_rule_fails_its_test(prometheus_tool: Callable[[str], str], tmp_path: Path) -> None:
    """The same case against rules whose node-down expression can never match: promtool reports the missing alert."""
    broken = tmp_path / "roles" / "monitoring" / "files"
    broken.mkdir(parents=True)
    text = RULES.read_text().replace('up{job="scc_node"} == 0', 'up{job="scc_node"} == 2')
    (broken / "scc_rules.yml").write_text(text)
    case = tmp_path / "tests" / "unit" / "monitor" / "rules"
    case.mkdir(parents=True)
    (case / "node_down.yml").write_text((Path(__file__).parent / "rules" / "node_down.yml").read_text())
    done = _promtool(prometheus_tool, "test", "rules", str(case / "node_down.yml"), cwd=tmp_path)
    assert done.returncode != 0, done.stdout + done.stderr
    assert "alertname: SccNodeDown, time: 2m" in done.stderr and "got:[]" in done.stderr, done.stderr
