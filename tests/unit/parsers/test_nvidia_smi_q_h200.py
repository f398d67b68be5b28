"""parse_nvidia_smi_q on the H200 recording made by this project's GPU check (driver 580)."""

from __future__ import annotations

from pathlib import Path

from plugins.module_utils.parsers.nvidia_smi_q import parse_nvidia_smi_q

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "tool_outputs" / "nvidia_smi_q" / "h200_580.159.04.txt"


def test_h200_driver_580() -> None:
    data = parse_nvidia_smi_q(FIXTURE.read_text())
    assert data["driver_version"] == "580.159.04"
    assert str(data["cuda_version"]).startswith("13.0")
    assert data["attached_gpus"] == 1
    (gpu,) = data["gpus"]
    assert gpu["product_name"] == "NVIDIA H200"
    assert gpu["memory_total_mib"] > 140000
