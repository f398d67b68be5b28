"""A loopback stand-in for the Alibaba Cloud ECS RPC API (`DescribeInstances`, version 2014-05-26).

It speaks the API the way the official SDK (`alibabacloud_ecs20140526` over `alibabacloud_tea_openapi`) calls it:
POST / with the parameters in the query string (or a form body), `Action=DescribeInstances`, signed with
`ACS3-HMAC-SHA256` in the `Authorization` header (the SDK's default) or the older RPC `HMAC-SHA1` `Signature`
parameter. Answers have the real JSON shape; errors the real `{"RequestId","HostId","Code","Message"}` shape and
HTTP status. It binds loopback only.

    with running(instances, keys={"AKID": "secret"}) as api:
        ...  # endpoint: api.url  (http://127.0.0.1:PORT)

or from a shell: `python -m sccnlp.testbed.ecs_api --instances nodes.json --port 8950 --key AKID:SECRET`.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import hmac
import ipaddress
import json
import random
import sys
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

API_VERSION = "2014-05-26"
LOOPBACK = ("127.0.0.1", "::1", "localhost")
DEFAULT_KEYS = {"LTAItestbed": "testbed-secret"}


class ApiError(Exception):
    """An ECS error answer: HTTP status + Code + Message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message


@dataclass
class Faults:
    """Error injection. Counters count down as faults are served; all are shared by every handler thread."""

    throttle: int = 0  # the next N requests answer Throttling.User (HTTP 400)
    server_errors: int = 0  # the next N requests answer ServiceUnavailable (HTTP 503)
    resets: int = 0  # the next N requests get their connection closed without an answer
    forbidden_keys: set[str] = field(default_factory=set)  # these access key ids get Forbidden.RAM (HTTP 403)
    delay_s: float = 0.0  # sleep before answering (for client timeouts)


@dataclass
class ApiState:
    instances: list[dict[str, Any]]
    keys: dict[str, str]
    regions: set[str]
    tokens: dict[str, str] = field(default_factory=dict)  # key id -> required STS security token
    faults: Faults = field(default_factory=Faults)
    requests: list[dict[str, str]] = field(default_factory=list)  # every request's parameters, in order
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def request_count(self) -> int:
        with self.lock:
            return len(self.requests)

    def reset_requests(self) -> None:
        with self.lock:
            self.requests.clear()


# ---------------------------------------------------------------------------------------------------------------
# Signatures (verified exactly as the SDK computes them, see alibabacloud_tea_openapi/utils.py)


def _canonical_query(params: Mapping[str, str]) -> str:
    return "&".join(f"{k}={quote(params[k], safe='~')}" for k in sorted(params))


def acs3_signature(method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str],
                   signed_headers: Sequence[str], payload_hash: str, secret: str) -> str:
    """ACS3-HMAC-SHA256 signature (hex) of a request."""
    canon_headers = "".join(f"{h}:{headers.get(h, '').strip()}\n" for h in signed_headers)
    canonical = "\n".join([method, path or "/", _canonical_query(query), canon_headers, ";".join(signed_headers),
                           payload_hash])
    to_sign = "ACS3-HMAC-SHA256\n" + hashlib.sha256(canonical.encode()).hexdigest()
    return hmac.new(secret.encode(), to_sign.encode(), hashlib.sha256).hexdigest()


def rpc_v1_signature(method: str, params: Mapping[str, str], secret: str) -> str:
    """The older RPC signature (HMAC-SHA1 over the sorted, percent-encoded parameters)."""
    canon = "&".join(f"{quote(k, safe='~')}={quote(params[k], safe='~')}" for k in sorted(params) if k != "Signature")
    to_sign = f"{method}&%2F&{quote(canon, safe='~')}"
    digest = hmac.new(f"{secret}&".encode(), to_sign.encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


def _parse_authorization(value: str) -> tuple[str, str, list[str], str]:
    algorithm, _unused, rest = value.partition(" ")
    parts = dict(p.split("=", 1) for p in rest.split(",") if "=" in p)
    return algorithm, parts.get("Credential", ""), parts.get("SignedHeaders", "").split(";"), parts.get("Signature", "")


def authenticate(state: ApiState, method: str, path: str, query: dict[str, str], body: bytes,
                 headers: Mapping[str, str]) -> str:
    """Return the caller's access key id, or raise the ApiError ECS would answer."""
    auth = headers.get("authorization", "")
    if auth:
        algorithm, key_id, signed, signature = _parse_authorization(auth)
        if algorithm != "ACS3-HMAC-SHA256":
            raise ApiError(400, "InvalidParameter.SignatureMethod", f"Unsupported signature algorithm {algorithm}.")
        secret = state.keys.get(key_id)
        if secret is None:
            raise ApiError(404, "InvalidAccessKeyId.NotFound", "Specified access key is not found.")
        payload_hash = headers.get("x-acs-content-sha256", "")
        if payload_hash != hashlib.sha256(body).hexdigest():
            raise ApiError(400, "IncompleteSignature", "The request body does not match x-acs-content-sha256.")
        expected = acs3_signature(method, path, query, headers, signed, payload_hash, secret)
        if not hmac.compare_digest(expected, signature):
            raise ApiError(400, "SignatureDoesNotMatch",
                           "Specified signature is not matched with our calculation.")
        token = headers.get("x-acs-security-token")
    elif "Signature" in query:
        key_id = query.get("AccessKeyId", "")
        secret = state.keys.get(key_id)
        if secret is None:
            raise ApiError(404, "InvalidAccessKeyId.NotFound", "Specified access key is not found.")
        if not hmac.compare_digest(rpc_v1_signature(method, query, secret), query["Signature"]):
            raise ApiError(400, "SignatureDoesNotMatch",
                           "Specified signature is not matched with our calculation.")
        token = query.get("SecurityToken")
    else:
        raise ApiError(400, "MissingParameter.AccessKeyId", "AccessKeyId is mandatory for this action.")
    wanted = state.tokens.get(key_id)
    if wanted is not None and token != wanted:
        raise ApiError(400, "InvalidSecurityToken.Expired", "Specified SecurityToken is expired.")
    return key_id


# ---------------------------------------------------------------------------------------------------------------
# DescribeInstances


def _tags_of(instance: Mapping[str, Any]) -> dict[str, str]:
    return {t.get("TagKey", ""): t.get("TagValue", "") for t in (instance.get("Tags") or {}).get("Tag", [])}


def _family_of(instance_type: str) -> str:
    return ".".join(instance_type.split(".")[:2])


def _tag_filters(params: Mapping[str, str]) -> list[tuple[str, str | None]]:
    found = []
    for n in range(1, 21):
        key = params.get(f"Tag.{n}.Key")
        if key is not None:
            found.append((key, params.get(f"Tag.{n}.Value")))
    return found


def select(instances: Sequence[Mapping[str, Any]], params: Mapping[str, str]) -> list[Mapping[str, Any]]:
    """The instances DescribeInstances would list for these parameters (before paging)."""
    wanted_ids: list[str] | None = None
    if params.get("InstanceIds"):
        try:
            wanted_ids = json.loads(params["InstanceIds"])
        except ValueError as exc:
            raise ApiError(400, "InvalidInstanceIds.Malformed", "The specified InstanceIds are malformed.") from exc
        if not isinstance(wanted_ids, list) or len(wanted_ids) > 100:
            raise ApiError(400, "InvalidInstanceIds.Malformed", "InstanceIds must be a JSON list of at most 100.")
    simple = {"VpcId": ("VpcAttributes", "VpcId"), "VSwitchId": ("VpcAttributes", "VSwitchId"),
              "ZoneId": ("ZoneId",), "InstanceType": ("InstanceType",), "Status": ("Status",),
              "InstanceName": ("InstanceName",)}
    tags = _tag_filters(params)
    region = params.get("RegionId")
    out = []
    for inst in instances:
        if inst.get("RegionId") != region:
            continue
        if wanted_ids is not None and inst.get("InstanceId") not in wanted_ids:
            continue
        family = params.get("InstanceTypeFamily")
        if family and _family_of(inst.get("InstanceType", "")) != family:
            continue
        skip = False
        for name, path in simple.items():
            if params.get(name):
                value: Any = inst
                for step in path:
                    value = (value or {}).get(step)
                if value != params[name]:
                    skip = True
                    break
        if skip:
            continue
        have = _tags_of(inst)
        if any(k not in have or (v is not None and have[k] != v) for k, v in tags):
            continue
        out.append(inst)
    return out


def _int_param(params: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = params.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ApiError(400, f"InvalidParameter.{name}", f"The specified {name} is invalid.") from exc
    if not low <= value <= high:
        raise ApiError(400, f"InvalidParameter.{name}", f"The specified {name} is out of range [{low}, {high}].")
    return value


def _encode_token(offset: int) -> str:
    return base64.urlsafe_b64encode(f"scc-offset:{offset}".encode()).decode().rstrip("=")


def _decode_token(token: str) -> int:
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        prefix, _unused, number = text.partition(":")
        if prefix != "scc-offset":
            raise ValueError(token)
        return int(number)
    except ValueError as exc:
        raise ApiError(400, "InvalidParameter.NextToken", "The specified NextToken is invalid.") from exc


def describe_instances(state: ApiState, params: Mapping[str, str], request_id: str) -> dict[str, Any]:
    region = params.get("RegionId", "")
    if not region:
        raise ApiError(400, "MissingRegionId", "RegionId is mandatory for this action.")
    if region not in state.regions:
        raise ApiError(404, "InvalidRegionId.NotFound", "The specified RegionId does not exist.")
    matched = select(state.instances, params)
    if "MaxResults" in params or "NextToken" in params or "PageNumber" not in params:
        size = _int_param(params, "MaxResults", 10, 1, 100)
        offset = _decode_token(params["NextToken"]) if params.get("NextToken") else 0
        page = matched[offset:offset + size]
        nxt = _encode_token(offset + size) if offset + size < len(matched) else ""
        return {"RequestId": request_id, "TotalCount": len(matched), "PageSize": size, "NextToken": nxt,
                "Instances": {"Instance": list(page)}}
    size = _int_param(params, "PageSize", 10, 1, 100)
    number = _int_param(params, "PageNumber", 1, 1, 1 << 30)
    page = matched[(number - 1) * size: number * size]
    return {"RequestId": request_id, "TotalCount": len(matched), "PageSize": size, "PageNumber": number,
            "Instances": {"Instance": list(page)}}


# ---------------------------------------------------------------------------------------------------------------
# HTTP


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "scc-ecs-testbed/1"
    state: ApiState  # set on the subclass made by serve()

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        request_id = str(uuid.uuid4()).upper()
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        split = urlsplit(self.path)
        query = dict(parse_qsl(split.query, keep_blank_values=True))
        headers = {k.lower(): v for k, v in self.headers.items()}
        params = dict(query)
        if body and headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            params.update(parse_qsl(body.decode(), keep_blank_values=True))
        state = self.state
        faults = state.faults
        with state.lock:
            state.requests.append(dict(params))
            reset = faults.resets > 0
            if reset:
                faults.resets -= 1
        if reset:
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if faults.delay_s:
            threading.Event().wait(faults.delay_s)
        try:
            key_id = authenticate(state, self.command, split.path, query, body, headers)
            with state.lock:
                throttled = faults.throttle > 0
                if throttled:
                    faults.throttle -= 1
                failing = not throttled and faults.server_errors > 0
                if failing:
                    faults.server_errors -= 1
            if throttled:
                raise ApiError(400, "Throttling.User", "Request was denied due to user flow control.")
            if failing:
                raise ApiError(503, "ServiceUnavailable", "The request has failed due to a temporary failure.")
            if key_id in faults.forbidden_keys:
                raise ApiError(403, "Forbidden.RAM", "User not authorized to operate on the specified resource, "
                                                     "or this API doesn't support RAM.")
            action = params.get("Action") or headers.get("x-acs-action", "")
            version = params.get("Version") or headers.get("x-acs-version", "")
            if version != API_VERSION:
                raise ApiError(400, "InvalidVersion", f"Specified parameter Version {version!r} is not valid.")
            if action != "DescribeInstances":
                raise ApiError(404, "InvalidAction.NotFound", f"Specified api {action!r} is not found.")
            self._send(200, describe_instances(state, params, request_id))
        except ApiError as err:
            self._send(err.status, {"RequestId": request_id, "HostId": self.headers.get("host", ""),
                                    "Code": err.code, "Message": err.message,
                                    "Recommend": "https://api.aliyun.com/troubleshoot"})

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json;charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class EcsApiServer(ThreadingHTTPServer):
    daemon_threads = True
    state: ApiState

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        address = self.server_address[0]
        host = address.decode() if isinstance(address, bytes) else str(address)
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}"


def _check_loopback(host: str) -> None:
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise ValueError(f"the ECS stand-in binds loopback only, not {host!r}: use 127.0.0.1")


def serve(instances: Sequence[Mapping[str, Any]], host: str = "127.0.0.1", port: int = 0,
          keys: Mapping[str, str] | None = None, regions: Sequence[str] | None = None,
          tokens: Mapping[str, str] | None = None, faults: Faults | None = None) -> tuple[EcsApiServer, int]:
    """Start the API on a daemon thread; returns (server, port). Stop it with `server.shutdown()`.

    `regions` defaults to the regions of the instances (plus cn-hangzhou); any other RegionId answers
    InvalidRegionId.NotFound. `keys` maps access key id -> secret (default DEFAULT_KEYS).
    """
    _check_loopback(host)
    items = [dict(i) for i in instances]
    known = set(regions or ()) | {str(i.get("RegionId")) for i in items if i.get("RegionId")}
    state = ApiState(instances=items, keys=dict(keys if keys is not None else DEFAULT_KEYS),
                     regions=known or {"cn-hangzhou"}, tokens=dict(tokens or {}), faults=faults or Faults())
    handler = type("Handler", (_Handler,), {"state": state})
    server = EcsApiServer((host, port), handler)
    server.state = state
    thread = threading.Thread(target=server.serve_forever, name="scc-ecs-api", daemon=True)
    thread.start()
    return server, server.port


@contextlib.contextmanager
def running(instances: Sequence[Mapping[str, Any]], **kwargs: Any) -> Iterator[EcsApiServer]:
    """`serve()` as a context manager that shuts the server down on exit."""
    server, _unused = serve(instances, **kwargs)
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


# ---------------------------------------------------------------------------------------------------------------
# Instances


def make_instance(index: int, region: str = "cn-hangzhou", zone: str | None = None,
                  instance_type: str = "ecs.sccgn6.24xlarge", status: str = "Running",
                  vpc_id: str = "vpc-scc0001", vswitch_id: str | None = None, private_ip: str | None = None,
                  rdma_ip: str | None = None, tags: Mapping[str, str] | None = None,
                  name: str | None = None, hostname: str | None = None) -> dict[str, Any]:
    """One instance in the shape DescribeInstances returns it."""
    zone = zone or f"{region}-h"
    ip = private_ip or f"10.{(index >> 16) & 255}.{(index >> 8) & 255}.{index & 255 or 1}"
    ips = [ip] + ([rdma_ip] if rdma_ip else [])
    iid = f"i-scc{index:017x}"
    return {
        "InstanceId": iid,
        "InstanceName": name if name is not None else f"scc-node-{index:04d}",
        "HostName": hostname if hostname is not None else f"iZscc{index:06d}Z",
        "InstanceType": instance_type,
        "InstanceTypeFamily": _family_of(instance_type),
        "RegionId": region,
        "ZoneId": zone,
        "Status": status,
        "InstanceNetworkType": "vpc",
        "VpcAttributes": {"VpcId": vpc_id, "VSwitchId": vswitch_id or f"vsw-{zone}", "NatIpAddress": "",
                          "PrivateIpAddress": {"IpAddress": ips}},
        "PublicIpAddress": {"IpAddress": []},
        "InnerIpAddress": {"IpAddress": []},
        "EipAddress": {"AllocationId": "", "IpAddress": "", "InternetChargeType": ""},
        "NetworkInterfaces": {"NetworkInterface": [
            {"NetworkInterfaceId": f"eni-{iid[2:]}", "Type": "Primary", "PrimaryIpAddress": ip,
             "PrivateIpSets": {"PrivateIpSet": [{"PrivateIpAddress": ip, "Primary": True}]}}]},
        "Tags": {"Tag": [{"TagKey": k, "TagValue": v} for k, v in (tags or {}).items()]},
        "SecurityGroupIds": {"SecurityGroupId": ["sg-scc0001"]},
        "Cpu": 96, "Memory": 393216, "OSType": "linux", "OSName": "CentOS 7.9 64bit",
        "ImageId": "centos_7_9_x64_20G_alibase_20210318.vhd", "CreationTime": "2021-03-18T08:00Z",
        "InstanceChargeType": "PostPaid", "InternetChargeType": "PayByTraffic", "IoOptimized": True,
    }


def generate_instances(count: int, region: str = "cn-hangzhou", zones: Sequence[str] | None = None,
                       instance_types: Sequence[str] = ("ecs.sccgn6.24xlarge",), seed: int = 0,
                       tags: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """`count` synthetic instances spread over zones and types (deterministic for a seed)."""
    rng = random.Random(seed)
    zones = list(zones or (f"{region}-h", f"{region}-i"))
    out = []
    for i in range(count):
        itype = instance_types[i % len(instance_types)]
        rdma = f"192.168.{(i >> 8) & 255}.{i & 255 or 1}" if itype.startswith("ecs.sccgn6") else None
        out.append(make_instance(i + 1, region=region, zone=zones[i % len(zones)], instance_type=itype,
                                 rdma_ip=rdma, tags={"cluster": "bert", "rack": f"r{rng.randint(1, 8)}",
                                                     **(tags or {})}))
    return out


def load_instances(path: str | Path) -> list[dict[str, Any]]:
    """Instances from a JSON file: a list, or a DescribeInstances answer (`{"Instances": {"Instance": [...]}}`)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(data, dict):
        data = (data.get("Instances") or {}).get("Instance", [])
    if not isinstance(data, list) or not all(isinstance(i, dict) for i in data):
        raise ValueError(f"{path}: expected a JSON list of ECS instances")
    return data


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sccnlp.testbed.ecs_api", description=__doc__.splitlines()[0])
    src = parser.add_mutually_exclusive_group()
    src.add_argument("--instances", metavar="FILE", help="JSON list of instances in the DescribeInstances shape")
    src.add_argument("--generate", type=int, metavar="N", default=0, help="serve N synthetic instances")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--key", action="append", default=[], metavar="ID:SECRET",
                        help="an accepted access key (repeatable; default LTAItestbed:testbed-secret)")
    parser.add_argument("--region", action="append", default=[], help="an extra valid region id")
    parser.add_argument("--throttle", type=int, default=0, help="answer the first N requests with Throttling.User")
    args = parser.parse_args(argv)
    try:
        instances = load_instances(args.instances) if args.instances else generate_instances(args.generate)
        keys = dict(k.split(":", 1) for k in args.key) if args.key else None
        server, _unused = serve(instances, host=args.host, port=args.port, keys=keys, regions=args.region,
                                faults=Faults(throttle=args.throttle))
    except (OSError, ValueError) as exc:
        print(f"ecs_api: error: {exc}", file=sys.stderr)
        return 2
    print(f"ECS API stand-in on {server.url} ({len(instances)} instances)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
