"""A controller on an ECS instance with a RAM role: the inventory config names no credentials, and the plugin gets
temporary ones from the instance metadata service through alibabacloud_credentials' default chain.

The SDK asks the fixed address 100.100.100.200:80. The test runs in its own network namespace (`unshare --net`,
root) whose loopback carries that address, so a loopback metadata server answers there, and nothing of the host's
network changes. In the namespace: the metadata server (IMDSv2 token, role name, STS credentials), the loopback
ECS API (sccnlp.testbed.ecs_api) that only accepts the STS key with its security token, and `ansible-inventory`
with a config without keys, a HOME without profiles and no credential environment variables. About 5 s."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

ROLE = "scc-inventory-reader"
STS = {"AccessKeyId": "STS.loopbackkey42", "AccessKeySecret": "sts-secret-value", "SecurityToken": "sts-token-value"}
TOKEN = "imds-v2-token"
ANSIBLE_INVENTORY = str(Path(sys.executable).parent / "ansible-inventory")


class _Imds(BaseHTTPRequestHandler):
    """ECS instance metadata, the three answers the RAM role provider asks for; every request is recorded."""

    seen: list[tuple[str, str, str]] = []

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _send(self, status: int, body: str) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_PUT(self) -> None:
        self.seen.append(("PUT", self.path, ""))
        if self.path == "/latest/api/token" and self.headers.get("X-aliyun-ecs-metadata-token-ttl-seconds"):
            self._send(200, TOKEN)
        else:
            self._send(404, "not found")

    def do_GET(self) -> None:
        token = self.headers.get("X-aliyun-ecs-metadata-token", "")
        self.seen.append(("GET", self.path, token))
        if token != TOKEN:
            self._send(401, "IMDSv2 token required")
        elif self.path == "/latest/meta-data/ram/security-credentials/":
            self._send(200, ROLE)
        elif self.path == f"/latest/meta-data/ram/security-credentials/{ROLE}":
            self._send(200, json.dumps({"Code": "Success", "Expiration": "2099-01-01T00:00:00Z", **STS}))
        else:
            self._send(404, "not found")


def namespace_main(workdir: str) -> int:
    """Run inside the namespace: both loopback servers, then ansible-inventory; write what was seen to result.json."""
    from sccnlp.testbed.ecs_api import generate_instances, running

    imds = ThreadingHTTPServer(("100.100.100.200", 80), _Imds)
    threading.Thread(target=imds.serve_forever, daemon=True).start()
    work = Path(workdir)
    with running(generate_instances(3), keys={STS["AccessKeyId"]: STS["AccessKeySecret"]},
                 tokens={STS["AccessKeyId"]: STS["SecurityToken"]}) as api:
        cfg = work / "ram.scc.yml"
        cfg.write_text(f"plugin: scc.nlp_training.scc\nregions: [cn-hangzhou]\nendpoint: {api.url}\n"
                       f"profile_file: {work / 'no-aliyun-config.json'}\nretries: 0\ntimeout: 5\n")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ALIBABA_CLOUD_", "ALICLOUD_", "ANSIBLE_"))}
        env.update(HOME=str(work / "home"), ANSIBLE_COLLECTIONS_PATH=os.environ["ANSIBLE_COLLECTIONS_PATH"],
                   ANSIBLE_INVENTORY_ENABLED="scc.nlp_training.scc", ANSIBLE_INVENTORY_UNPARSED_FAILED="1",
                   NO_COLOR="1")
        proc = subprocess.run([ANSIBLE_INVENTORY, "-i", str(cfg), "--list"], env=env, capture_output=True,
                              text=True, check=False, timeout=120)
        calls = api.state.request_count
    imds.shutdown()
    (work / "result.json").write_text(json.dumps({"rc": proc.returncode, "stdout": proc.stdout,
                                                  "stderr": proc.stderr, "imds": _Imds.seen, "calls": calls}))
    return 0


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"),
                    reason="needs root with unshare and ip (a network namespace for 100.100.100.200)")
def test_ram_role_credentials_from_the_instance_metadata(tmp_path: Path, collections_path: str) -> None:
    (tmp_path / "home").mkdir()
    code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import test_ram_role as t; " \
           f"sys.exit(t.namespace_main({str(tmp_path)!r}))"
    script = ("ip link set lo up && ip addr add 100.100.100.200/32 dev lo && "
              f"exec {sys.executable} -c \"$0\"")
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": collections_path}
    outer = subprocess.run(["unshare", "--net", "sh", "-c", script, code], env=env, capture_output=True, text=True,
                           check=False, timeout=180)
    assert outer.returncode == 0, outer.stdout + outer.stderr
    seen = json.loads((tmp_path / "result.json").read_text())
    assert seen["rc"] == 0, seen["stderr"]
    hosts = json.loads(seen["stdout"])["scc_cluster"]["hosts"]
    assert len(hosts) == 3, seen["stdout"][:2000]
    # the chain asked the metadata service for a token, the role name and the role's credentials, in that order
    gets = [path for method, path, _token in seen["imds"] if method == "GET"]
    assert ("PUT", "/latest/api/token", "") in [tuple(x) for x in seen["imds"]]
    assert "/latest/meta-data/ram/security-credentials/" in gets
    assert f"/latest/meta-data/ram/security-credentials/{ROLE}" in gets
    # the loopback API knows only the role's temporary key and refuses it without its security token: the hosts
    # above came through calls signed with both
    assert seen["calls"] >= 1
    for secret in (STS["AccessKeySecret"], STS["SecurityToken"]):
        assert secret not in seen["stdout"] + seen["stderr"]
