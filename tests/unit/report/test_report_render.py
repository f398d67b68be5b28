from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

from sccnlp.report.render import write_report
from sccnlp.report.svg import human_bytes, line_chart

SVG_NS = "{http://www.w3.org/2000/svg}"


def test_writes_json_and_self_contained_html(results, tmp_path):
    json_path, html_path = write_report(results, tmp_path / "out")
    assert json_path == tmp_path / "out" / "report.json" and html_path == tmp_path / "out" / "report.html"
    data = json.loads(json_path.read_text())
    assert data["summary"] == {"status": "fail", "nodes": {"gpu1": "fail", "gpu2": "pass"},
                               "checks": {"pass": 3, "fail": 1, "skip": 1}}
    assert data["nodes"]["gpu1"]["checks"][0]["measured"] == 360.5
    html = html_path.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<style>" in html
    # self-contained: no scripts, no external stylesheets, images or fonts
    assert "<script" not in html.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "@import" not in html and "url(" not in html


def test_html_shows_checks_facts_and_plots(results, tmp_path):
    _json, html_path = write_report(results, tmp_path)
    html = html_path.read_text()
    assert "Cluster validation: scc-demo" in html and '<span class="badge fail big">FAIL</span>' in html
    failing_row = re.search(r'<tr class="fail"><td>nccl_all_reduce_busbw</td>.*?</tr>', html).group(0)
    assert "<td class=num>360.5</td><td class=num>431</td><td>GB/s</td><td>8 GPUs, 8 GiB message</td>" in failing_row
    skip_row = re.search(r'<tr class="skip"><td>ib_write_bw_loopback</td>.*?</tr>', html).group(0)
    assert '<span class="badge skip">SKIP</span>' in skip_row and "&ndash;" in skip_row
    for fact in ("NVIDIA H200", "570.124.06", "2.26.2", "9.8.0", "torch 2.6.0", "horovod", "mlx5_0, mlx5_1",
                 "<th>kernel</th><td>6.1.0</td>"):
        assert fact in html
    svgs = re.findall(r"<svg.*?</svg>", html, re.S)
    # gpu1: nccl + perftest, gpu2: nccl, cluster: 1, comparison across nodes: nccl_all_reduce + ib_write_bw
    assert len(svgs) == 6
    for svg in svgs:
        root = ET.fromstring(svg)  # well-formed XML
        for line in root.iter(f"{SVG_NS}polyline"):
            for pair in line.get("points").split():
                x, y = map(float, pair.split(","))
                assert 0 <= x <= 640 and 0 <= y <= 320
    comparison = next(s for s in svgs if "nccl_all_reduce: all nodes" in s)
    assert comparison.count("<polyline") == 2 and ">gpu1</text>" in comparison and ">gpu2</text>" in comparison
    gpu1_nccl = next(s for s in svgs if 'aria-label="nccl_all_reduce"' in s)
    assert gpu1_nccl.count("<polyline") == 2 and ">busbw</text>" in gpu1_nccl and ">algbw</text>" in gpu1_nccl


def test_text_from_nodes_is_escaped(results, tmp_path):
    results["nodes"]["gpu1"]["checks"][0]["detail"] = "<script>alert(1)</script>"
    results["nodes"]["gpu1"]["facts"]["note"] = "<img src=x onerror=alert(1)>"
    _json, html_path = write_report(results, tmp_path)
    html = html_path.read_text()
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_chart_axis_and_labels():
    svg = line_chart("bw", [("a", [(8, 0.0), (1 << 20, 10.0), (1 << 30, 24.0)])], "GB/s", floor=20.0)
    root = ET.fromstring(svg)
    ticks = [t.text for t in root.iter(f"{SVG_NS}text") if t.get("class") == "xtick"]
    assert ticks == ["8", "128", "2K", "32K", "512K", "8M", "128M"]  # 2^3 .. 2^30 in steps of 2^4
    assert [t.text for t in root.iter(f"{SVG_NS}text") if t.get("class") == "ytick"][-1] == "25"
    assert len([e for e in root.iter(f"{SVG_NS}line") if e.get("class") == "floor"]) == 1
    assert line_chart("empty", [("a", [])], "GB/s").startswith('<p class="noplot">')
    assert (human_bytes(8), human_bytes(1024), human_bytes(3 << 20), human_bytes(1 << 34)) == ("8", "1K", "3M", "16G")


def test_overview_row_names_each_nodes_software(results, tmp_path):
    results["nodes"]["gpu1"]["facts"]["training_backend"] = "aiacc (AIACC-Training 1.5.0 imports)"
    _json, html_path = write_report(results, tmp_path)
    html = html_path.read_text()
    header = re.search(r"<tr><th>Node</th>.*?</tr>", html).group(0)
    assert header.endswith("<th>Driver</th><th>CUDA</th><th>Python</th><th>Framework</th><th>Training backend</th>"
                           "<th>NCCL transport</th></tr>")
    row = re.search(r'<tr class="fail"><td><a href="#node-gpu1">.*?</tr>', html).group(0)
    assert row.endswith("<td>570.124.06</td><td>12.8</td><td>3.11.9</td><td>torch 2.6.0</td>"
                        "<td>aiacc (AIACC-Training 1.5.0 imports)</td><td>nccl/ib (mlx5_0,mlx5_1)</td></tr>")
    gpu2 = re.search(r'<tr class="pass"><td><a href="#node-gpu2">.*?</tr>', html).group(0)
    assert gpu2.endswith("<td>570.124.06</td><td></td><td></td><td></td><td></td><td></td></tr>")
