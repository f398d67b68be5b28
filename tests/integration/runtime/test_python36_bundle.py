"""With an offline bundle (scc_bundle_dir), the node's pip.conf has the bundle's wheels as its only source, whatever
the inventory's wheel directories and index URLs say; without it, those settings are written as before."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def _settings(tmp_path: Path) -> dict[str, Any]:
    return {"python36_interpreter": sys.executable, "python36_requirements": [],
            "python36_version": f"{sys.version_info[0]}.{sys.version_info[1]}",
            "python36_pip_conf_path": str(tmp_path / "etc" / "pip.conf"),
            "python36_pip_find_links": ["/opt/wheels"], "python36_pip_index_url": "https://mirror.example/simple"}


def test_the_bundle_replaces_every_pip_source(role_play: Any, tmp_path: Path) -> None:
    (tmp_path / "bundle" / "wheels").mkdir(parents=True)
    run = role_play.run("python36", {**_settings(tmp_path), "scc_bundle_dir": str(tmp_path / "bundle")},
                        tasks_from="main", check=False)
    assert run.rc == 0, run.output[-3000:]
    conf = (tmp_path / "etc" / "pip.conf").read_text()
    assert f"find-links =\n    {tmp_path}/bundle/wheels\n" in conf and "no-index = true" in conf
    assert "/opt/wheels" not in conf and "index-url" not in conf


def test_without_a_bundle_the_settings_are_written(role_play: Any, tmp_path: Path) -> None:
    run = role_play.run("python36", _settings(tmp_path), tasks_from="main", check=False)
    assert run.rc == 0, run.output[-3000:]
    conf = (tmp_path / "etc" / "pip.conf").read_text()
    assert "index-url = https://mirror.example/simple" in conf and "    /opt/wheels\n" in conf
    assert "no-index" not in conf
