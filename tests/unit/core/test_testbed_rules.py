"""`sccnlp testbed down` removes every iptables rule `up` added for its subnet (forwarding and no-egress), also when
the test bed's state is gone, and leaves other subnets' rules alone. iptables and Docker are recorded fakes."""

from __future__ import annotations

import ipaddress
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sccnlp.testbed import cluster

NET = ipaddress.IPv4Network("10.93.0.0/24")
OTHER = ["FORWARD", "-s", "10.77.0.0/24", "-d", "10.77.0.0/24", "-j", "ACCEPT"]


class FakeIptables:
    def __init__(self) -> None:
        self.rules: list[list[str]] = [OTHER]

    def run(self, argv: list[str], **_kw: Any) -> subprocess.CompletedProcess[str]:
        assert argv[0] == "iptables", argv
        op, rule = argv[1], list(argv[2:])
        rc = 0
        if op == "-C":
            rc = 0 if rule in self.rules else 1
        elif op == "-I":
            self.rules.insert(0, rule)
        elif op == "-D":
            rc = 0 if rule in self.rules else 1
            if rc == 0:
                self.rules.remove(rule)
        return subprocess.CompletedProcess(argv, rc, "", "")


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeIptables:
    ipt = FakeIptables()
    monkeypatch.setenv("SCCNLP_HOME", str(tmp_path))
    monkeypatch.setattr(cluster.subprocess, "run", ipt.run)
    monkeypatch.setattr(cluster.shutil, "which", lambda name: f"/usr/sbin/{name}")

    def docker(argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        out = f"{NET} " if argv[:2] == ["network", "inspect"] and "-f" in argv else ""
        return subprocess.CompletedProcess(argv, 0, out, "")
    monkeypatch.setattr(cluster.dk, "run", docker)
    monkeypatch.setattr(cluster.dk, "daemon_answers", lambda: True)
    return ipt


def _what_up_adds() -> None:
    cluster._allow_forwarding(NET)
    cluster._set_egress(NET, True, lambda _m: None)
    cluster._set_egress(NET, False, lambda _m: None)


@pytest.mark.parametrize("with_state", [True, False])
def test_down_removes_every_rule_up_added(fakes: FakeIptables, with_state: bool) -> None:
    _what_up_adds()
    _what_up_adds()  # a second `up` adds nothing twice
    assert len(fakes.rules) == 3
    if with_state:
        tb = cluster.Testbed(cluster.TestbedSpec(name="hd2", subnet=str(NET)))
        tb.save()
    cluster.down("hd2", log=lambda _m: None)
    assert fakes.rules == [OTHER]


def test_down_removes_duplicates_left_by_older_versions(fakes: FakeIptables) -> None:
    fakes.rules[:0] = [cluster._forwarding_rule(NET)] * 3
    cluster.down("hd2", log=lambda _m: None)
    assert fakes.rules == [OTHER]
