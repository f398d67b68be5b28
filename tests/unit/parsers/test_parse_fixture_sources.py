"""Every recorded output has a sibling .source.txt saying where it came from, and each tool has >= 3 samples."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tool_outputs"

TOOLS = ("ibstat", "ibv_devinfo", "perftest", "nccl_tests", "nvidia_smi_q", "mpirun", "glusterfs")


@pytest.mark.parametrize("tool", TOOLS)
def test_each_fixture_names_its_source(tool):
    samples = [p for p in (FIXTURES / tool).glob("*.txt") if not p.name.endswith(".source.txt")]
    assert len(samples) >= 3, f"{tool}: only {len(samples)} recorded outputs"
    for sample in samples:
        source = sample.with_name(sample.name[:-4] + ".source.txt")
        assert source.is_file(), f"{sample} has no {source.name}"
        text = source.read_text()
        assert "What:" in text and ("Repository:" in text or "Source:" in text), f"{source} does not say where from"
