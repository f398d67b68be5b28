"""Benchmark: `ansible-inventory --list` over the scc inventory plugin against the loopback ECS API.

5,000 instances in 50 pages (MaxResults 100). Measures, each as the mean of RUNS runs of the same command:
  static   `ansible-inventory -i one-host.ini --list`             (the baseline: Ansible's own start-up)
  cold     `ansible-inventory -i bench.scc.yml --list --flush-cache`  (every page fetched through the SDK)
  hit      `ansible-inventory -i bench.scc.yml --list`             (cache hit: the server must see no request)
and the same two with a `compose` + `keyed_groups` config. Goals (over the static baseline): cold <= 2 s, hit <= 0.2 s.
Also measured, as Ansible's own floor for this many hosts:
  static-N `ansible-inventory -i static-N.yml --list`  (the same N host names, `ansible_host` only, no plugin)

    PYTHONPATH=. .venv/bin/python tests/bench/inventory_bench.py [--runs 3] [--instances 5000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sccnlp.runner import _collections_path
from sccnlp.testbed.ecs_api import generate_instances, running

KEY_ID, SECRET = "LTAIbench0001", "bench-secret"
TYPES = ("ecs.sccgn6.24xlarge", "ecs.sccgn6e.24xlarge", "ecs.ebmgn8v.48xlarge", "ecs.ebmgn7vx.32xlarge")


def config(url: str, cache_dir: Path, extra: str = "") -> str:
    return (f"plugin: scc.nlp_training.scc\nregions: [cn-hangzhou]\nendpoint: {url}\n"
            f"access_key_id: {KEY_ID}\naccess_key_secret: {SECRET}\n"
            "cache: true\ncache_plugin: ansible.builtin.jsonfile\n"
            f"cache_connection: {cache_dir}\ncache_timeout: 3600\n{extra}")


def timed(cmd: list[str], env: dict[str, str], runs: int) -> list[float]:
    times = []
    for _round in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0 or '"_meta"' not in proc.stdout:
            raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--instances", type=int, default=5000)
    args = parser.parse_args()
    tool = str(Path(sys.executable).parent / "ansible-inventory")
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": _collections_path(), "ANSIBLE_INVENTORY_UNPARSED_FAILED": "1"}
    work = Path(tempfile.mkdtemp(prefix="inv-bench-"))
    results: dict[str, list[float]] = {}
    try:
        (work / "one.ini").write_text("node1 ansible_host=127.0.0.1\n")
        insts = generate_instances(args.instances, instance_types=TYPES)
        with running(insts, keys={KEY_ID: SECRET}) as api:
            plain = work / "bench.scc.yml"
            plain.write_text(config(api.url, work / "cache-plain"))
            rich = work / "rich.scc.yml"
            rich.write_text(config(api.url, work / "cache-rich",
                                   "compose:\n  ansible_user: \"'root'\"\n"
                                   "keyed_groups:\n  - key: scc_tags.rack\n    prefix: rack\n"))
            results["static"] = timed([tool, "-i", str(work / "one.ini"), "--list"], env, args.runs)
            static_n = work / f"static-{len(insts)}.yml"
            ips = [i["VpcAttributes"]["PrivateIpAddress"]["IpAddress"][0] for i in insts]
            static_n.write_text("all:\n  hosts:\n" + "".join(
                f"    {i['InstanceId']}:\n      ansible_host: {ip}\n" for i, ip in zip(insts, ips, strict=True)))
            results[f"static-{len(insts)}"] = timed([tool, "-i", str(static_n), "--list"], env, args.runs)
            for label, cfg in (("plain", plain), ("rich", rich)):
                api.state.reset_requests()
                results[f"{label} cold"] = timed([tool, "-i", str(cfg), "--list", "--flush-cache"], env, args.runs)
                cold_requests = api.state.request_count / args.runs
                api.state.reset_requests()
                results[f"{label} hit"] = timed([tool, "-i", str(cfg), "--list"], env, args.runs)
                hit_requests = api.state.request_count
                print(f"{label}: {cold_requests:.0f} requests per cold run, {hit_requests} on cache hits")
                if hit_requests:
                    raise SystemExit("cache hit made API requests")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = statistics.mean(results["static"])
    print(f"{'case':<12} {'mean s':>8} {'min s':>8} {'over static s':>14}")
    for label, times in results.items():
        mean = statistics.mean(times)
        print(f"{label:<12} {mean:8.2f} {min(times):8.2f} {mean - base:14.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
