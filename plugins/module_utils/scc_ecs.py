# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0 (see galaxy.yml)
"""ECS `DescribeInstances` through the official SDK: credentials, paging, retries, and one-line error messages.

No Ansible imports here: the inventory plugin turns `EcsError` into `AnsibleError`. Nothing in this module prints
or logs a credential; messages name an access key only by its last four characters.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

SDK_HINT = "pip install alibabacloud_ecs20140526 alibabacloud_tea_openapi (the controller extra of sccnlp)"
PAGE_SIZE = 100  # MaxResults: the API's maximum
MAX_PAGES = 10000


class EcsError(Exception):
    """A user-facing, one-line error: what failed, why, and the fix."""


# ---------------------------------------------------------------------------------------------------------------
# Credentials


@dataclass(frozen=True)
class Credentials:
    access_key_id: str
    access_key_secret: str = field(repr=False)
    security_token: str | None = field(default=None, repr=False)
    source: str = "options"
    region: str | None = None

    @property
    def key_hint(self) -> str:
        """How messages name the key: its last four characters only."""
        return f"...{self.access_key_id[-4:]}" if len(self.access_key_id) > 4 else "..."


MISSING_CREDENTIALS = (
    "no Alibaba Cloud credentials found: set access_key_id and access_key_secret in the inventory config, or export "
    "ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET (older: ALICLOUD_ACCESS_KEY, "
    "ALICLOUD_SECRET_KEY), or name a profile of ~/.aliyun/config.json with `profile` (ALICLOUD_PROFILE)"
)


DEFAULT_CHAIN_HINT = (
    "; nor did the SDK's default chain (RAM role of this ECS instance through the instance metadata, an OIDC role "
    "from ALIBABA_CLOUD_ROLE_ARN/ALIBABA_CLOUD_OIDC_PROVIDER_ARN/ALIBABA_CLOUD_OIDC_TOKEN_FILE, a profile of "
    "~/.alibabacloud/credentials such as a RamRoleArn one)"
)


def load_profile(path: str, name: str | None) -> dict[str, Any] | None:
    """The named (or current) profile of an aliyun CLI config file; None when the file does not exist."""
    expanded = os.path.expanduser(path)
    if not os.path.exists(expanded):
        if name:
            raise EcsError(f"profile {name!r} was asked for but {path} does not exist: create it with "
                           "`aliyun configure --profile NAME` or set profile_file to its path")
        return None
    try:
        with open(expanded, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        raise EcsError(f"cannot read the aliyun profile file {path}: {exc.__class__.__name__}; fix its JSON or "
                       "point profile_file elsewhere") from None
    wanted = name or data.get("current") or "default"
    for prof in data.get("profiles") or []:
        if isinstance(prof, dict) and prof.get("name") == wanted:
            return prof
    if name:
        known = ", ".join(sorted(str(p.get("name")) for p in data.get("profiles") or [] if isinstance(p, dict)))
        raise EcsError(f"profile {name!r} is not in {path} (profiles: {known or 'none'}): fix `profile` "
                       "(ALICLOUD_PROFILE)")
    return None


def resolve_credentials(access_key_id: str | None, access_key_secret: str | None, security_token: str | None,
                        profile: str | None, profile_file: str) -> Credentials:
    """Explicit settings (options or their environment variables) first, then the aliyun CLI profile."""
    if access_key_id and access_key_secret:
        return Credentials(access_key_id.strip(), access_key_secret.strip(), (security_token or "").strip() or None)
    if access_key_id or access_key_secret:
        missing = "access_key_secret (ALIBABA_CLOUD_ACCESS_KEY_SECRET)" if access_key_id else \
            "access_key_id (ALIBABA_CLOUD_ACCESS_KEY_ID)"
        raise EcsError(f"only half of an access key is set: also set {missing}")
    prof = load_profile(profile_file, profile)
    if prof is None:
        return default_chain()
    mode = prof.get("mode") or "AK"
    if mode not in ("AK", "StsToken"):
        raise EcsError(f"profile {prof.get('name')!r} in {profile_file} uses mode {mode!r}; this inventory supports "
                       "AK and StsToken profiles: use one of those or set access_key_id/access_key_secret")
    key_id, secret = prof.get("access_key_id") or "", prof.get("access_key_secret") or ""
    if not key_id or not secret:
        raise EcsError(f"profile {prof.get('name')!r} in {profile_file} has no access_key_id/access_key_secret: "
                       "run `aliyun configure` for it")
    token = prof.get("sts_token") if mode == "StsToken" else None
    return Credentials(key_id, secret, token or None, source=f"profile {prof.get('name')}",
                       region=prof.get("region_id") or None)


def default_chain() -> Credentials:
    """The SDK's default credential chain (alibabacloud_credentials), for what the settings above do not name:
    environment, OIDC role (ALIBABA_CLOUD_ROLE_ARN, ALIBABA_CLOUD_OIDC_PROVIDER_ARN, ALIBABA_CLOUD_OIDC_TOKEN_FILE),
    the aliyun CLI and ~/.alibabacloud/credentials profiles (RamRoleArn among them), and the RAM role of the ECS
    instance this controller runs on (instance metadata). The chain's own messages are not shown: they may quote
    a profile's settings."""
    try:
        from alibabacloud_credentials.client import Client as CredentialClient
    except ImportError:
        raise EcsError(f"{MISSING_CREDENTIALS} ({SDK_HINT})") from None
    try:
        found = CredentialClient().get_credential()
    except Exception:  # the chain raises CredentialException, or network errors of the metadata service
        raise EcsError(MISSING_CREDENTIALS + DEFAULT_CHAIN_HINT) from None
    key_id, secret = found.get_access_key_id() or "", found.get_access_key_secret() or ""
    if not key_id or not secret:
        raise EcsError(MISSING_CREDENTIALS + DEFAULT_CHAIN_HINT)
    provider = (found.get_provider_name() or "default").split("/")[-1]
    return Credentials(key_id, secret, found.get_security_token() or None, source=f"default chain: {provider}")


# ---------------------------------------------------------------------------------------------------------------
# Endpoint and request


def split_endpoint(endpoint: str | None, region: str) -> tuple[str | None, str]:
    """(host[:port] for the SDK, protocol). `{region}` in the endpoint is replaced; a URL sets the protocol."""
    if not endpoint:
        return None, "HTTPS"
    endpoint = endpoint.replace("{region}", region)
    if "://" in endpoint:
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise EcsError(f"endpoint {endpoint!r} is not an http(s) URL or host name: use e.g. "
                           "ecs-vpc.cn-hangzhou.aliyuncs.com or http://127.0.0.1:8950")
        return parts.netloc, parts.scheme.upper()
    return endpoint.rstrip("/"), "HTTPS"


def request_args(region: str, filters: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments for `DescribeInstancesRequest` from the plugin's `filters` (server-side ones only)."""
    args: dict[str, Any] = {"region_id": region, "max_results": PAGE_SIZE}
    for option, arg in (("vpc_id", "vpc_id"), ("vswitch_id", "v_switch_id"), ("zone_id", "zone_id"),
                        ("instance_type_family", "instance_type_family")):
        if filters.get(option):
            args[arg] = str(filters[option])
    status = filters.get("status")
    if status and str(status).lower() != "any":
        args["status"] = str(status)
    types = list(filters.get("instance_types") or [])
    if len(types) == 1:
        args["instance_type"] = types[0]
    ids = list(filters.get("instance_ids") or [])
    if ids:
        args["instance_ids"] = json.dumps(ids)
    tags = filters.get("tags") or {}
    if tags:
        args["tag"] = [(str(k), None if v is None else str(v)) for k, v in tags.items()]
    return args


def keep_instance(instance: Mapping[str, Any], filters: Mapping[str, Any]) -> bool:
    """Client-side filters the API cannot express in one call (several instance types)."""
    types = list(filters.get("instance_types") or [])
    return not (len(types) > 1 and instance.get("InstanceType") not in types)


# ---------------------------------------------------------------------------------------------------------------
# Paging and retries (pure: the fetch and sleep functions are passed in)


def paginate(fetch_page: Callable[[str | None], Mapping[str, Any]], max_pages: int = MAX_PAGES) -> list[dict[str, Any]]:
    """Every instance over all pages: call `fetch_page(next_token)` until NextToken is empty."""
    instances: list[dict[str, Any]] = []
    token: str | None = None
    seen: set[str] = set()
    for _round in range(max_pages):
        page = fetch_page(token)
        instances.extend((page.get("Instances") or {}).get("Instance") or [])
        token = page.get("NextToken") or None
        if not token:
            return instances
        if token in seen:
            raise EcsError(f"ECS returned NextToken {token!r} twice; the listing would never end (API fault): "
                           "retry later")
        seen.add(token)
    raise EcsError(f"ECS listing did not end after {max_pages} pages: narrow `filters`")


def error_code(exc: BaseException) -> str:
    return str(getattr(exc, "code", "") or "")


def is_transient(exc: BaseException) -> bool:
    """Throttling, 5xx answers, connection resets and timeouts are worth a retry; everything else is final."""
    code = error_code(exc)
    if code.startswith("Throttling") or code in ("ServiceUnavailable", "InternalError", "UnknownError"):
        return True
    status = getattr(exc, "status_code", None) or getattr(exc, "statusCode", None)
    if isinstance(status, int):
        return status >= 500 or status == 429
    return _network_reason(exc) is not None


def _network_reason(exc: BaseException) -> str | None:
    """'timed out' / 'connection refused' / ... for transport failures, None for API answers."""
    if getattr(exc, "status_code", None):
        return None
    inner = getattr(exc, "inner_exception", None)
    text = str(getattr(inner, "message", "") or inner or exc).lower()
    for needle, reason in (("timed out", "timed out"), ("timeout", "timed out"),
                           ("refused", "connection refused"), ("reset", "connection reset"),
                           ("aborted", "connection reset"), ("remote end closed", "connection reset"),
                           ("name or service not known", "host name does not resolve"),
                           ("nodename nor servname", "host name does not resolve"),
                           ("temporary failure in name resolution", "host name does not resolve"),
                           ("unreachable", "network unreachable"), ("max retries exceeded", "connection failed"),
                           ("ssl", "TLS handshake failed")):
        if needle in text:
            return reason
    if exc.__class__.__name__ in ("UnretryableException", "RetryError", "ConnectionError", "OSError"):
        return "connection failed"
    return None


def with_retries(call: Callable[[], Any], retries: int, delay: float,
                 sleep: Callable[[float], None] = time.sleep, max_delay: float = 20.0) -> Any:
    """Run `call`, retrying transient failures `retries` times with exponential backoff (delay, 2*delay, ...)."""
    attempt = 0
    while True:
        try:
            return call()
        except Exception as exc:
            if attempt >= retries or not is_transient(exc):
                exc.attempts = attempt + 1  # type: ignore[attr-defined]
                raise
            pause = min(max_delay, delay * (2 ** attempt))
            sleep(pause + random.uniform(0, pause / 4))
            attempt += 1


# ---------------------------------------------------------------------------------------------------------------
# Error messages


def explain(exc: BaseException, region: str, endpoint: str, creds: Credentials | None, timeout: float) -> str:
    """One line naming the cause and the fix for an SDK exception."""
    code = error_code(exc)
    attempts = getattr(exc, "attempts", 1)
    key = f"access key {creds.key_hint} (from {creds.source})" if creds else "the access key"
    where = f"region {region} at {endpoint}"
    if code == "InvalidAccessKeyId.NotFound" or code == "InvalidAccessKeyId":
        return (f"ECS does not know {key} (InvalidAccessKeyId.NotFound, {where}): set access_key_id "
                "(ALIBABA_CLOUD_ACCESS_KEY_ID) to an active AccessKey of a RAM user")
    if code in ("SignatureDoesNotMatch", "IncompleteSignature", "InvalidAccessKeySecret"):
        return (f"the secret does not match {key} ({code}, {where}): set access_key_secret "
                "(ALIBABA_CLOUD_ACCESS_KEY_SECRET) to that key's secret, without stray spaces")
    if code.startswith("InvalidSecurityToken"):
        return (f"the STS security token for {key} is invalid or expired ({code}, {where}): fetch a fresh token and "
                "set security_token (ALIBABA_CLOUD_SECURITY_TOKEN)")
    if code.startswith("Forbidden") or code in ("NoPermission", "Forbidden.RAM"):
        return (f"{key} may not call ecs:DescribeInstances ({code}, {where}): attach the AliyunECSReadOnlyAccess "
                "policy (or one allowing ecs:DescribeInstances) to its RAM user")
    if code in ("InvalidRegionId.NotFound", "InvalidRegionId", "InvalidRegionId.Malformed"):
        return (f"ECS has no region {region!r} ({code}, endpoint {endpoint}): fix `regions` "
                "(e.g. cn-hangzhou, cn-beijing, ap-southeast-1)")
    if code.startswith("Throttling"):
        return (f"ECS kept throttling DescribeInstances in {where} ({code}) after {attempts} attempts: raise "
                "`retries`, run less often, or turn on `cache`")
    reason = _network_reason(exc)
    if reason is not None:
        return (f"cannot reach the ECS API for {where}: {reason} after {attempts} attempt(s) with a {timeout:g}s "
                "timeout: check `endpoint` and the network/proxy from this controller, or raise `timeout`")
    status = getattr(exc, "status_code", None)
    message = str(getattr(exc, "message", "") or exc).split(" request id:", maxsplit=1)[0]
    if message.startswith("code: "):
        message = message.split(", ", 1)[-1]
    return (f"ECS DescribeInstances failed in {where}: {code or exc.__class__.__name__}"
            f"{f' (HTTP {status})' if status else ''}: {message[:300]}")


# ---------------------------------------------------------------------------------------------------------------
# The client


@dataclass
class EcsSettings:
    endpoint: str | None = None
    timeout: float = 10.0
    retries: int = 4
    retry_delay: float = 1.0


class EcsInstances:
    """Lists instances per region with the official SDK (`alibabacloud_ecs20140526`)."""

    def __init__(self, creds: Credentials, settings: EcsSettings) -> None:
        try:
            from alibabacloud_ecs20140526.client import Client
            from alibabacloud_ecs20140526 import models
            from alibabacloud_tea_openapi import utils_models
            from darabonba.runtime import RuntimeOptions
        except ImportError:
            raise EcsError(f"the Alibaba Cloud ECS SDK is not installed on this controller: {SDK_HINT}") from None
        self._client_cls = Client
        self._models = models
        self._config_cls = utils_models.Config
        self._runtime_cls = RuntimeOptions
        self.creds = creds
        self.settings = settings
        self.requests = 0

    def _client(self, region: str) -> tuple[Any, str]:
        host, protocol = split_endpoint(self.settings.endpoint, region)
        ms = int(self.settings.timeout * 1000)
        config = self._config_cls(access_key_id=self.creds.access_key_id,
                                  access_key_secret=self.creds.access_key_secret,
                                  security_token=self.creds.security_token, region_id=region, endpoint=host,
                                  protocol=protocol, read_timeout=ms, connect_timeout=ms)
        client = self._client_cls(config)
        shown = f"{protocol.lower()}://{client._endpoint}"
        return client, shown

    def list_region(self, region: str, filters: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every instance of one region matching `filters` (raw API dicts)."""
        client, shown = self._client(region)
        args = request_args(region, filters)
        tags = args.pop("tag", None)
        if tags:
            args["tag"] = [self._models.DescribeInstancesRequestTag(key=k, value=v) for k, v in tags]
        runtime = self._runtime_cls()

        def fetch(token: str | None) -> Mapping[str, Any]:
            request = self._models.DescribeInstancesRequest(next_token=token, **args)

            def once() -> Any:
                self.requests += 1
                return client.describe_instances_with_options(request, runtime)

            return with_retries(once, self.settings.retries, self.settings.retry_delay).body.to_map()

        try:
            found = paginate(fetch)
        except EcsError:
            raise
        except Exception as exc:
            raise EcsError(explain(exc, region, shown, self.creds, self.settings.timeout)) from None
        return [i for i in found if keep_instance(i, filters)]

    def list_all(self, regions: Sequence[str], filters: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
        return {region: self.list_region(region, filters) for region in regions}
