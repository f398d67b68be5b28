"""Paging, retries, credentials and error messages (plugins/module_utils/scc_ecs.py), without a network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from alibabacloud_tea_openapi.exceptions import ClientException, ServerException, ThrottlingException

from plugins.module_utils.scc_ecs import (
    DEFAULT_CHAIN_HINT,
    MISSING_CREDENTIALS,
    Credentials,
    EcsError,
    explain,
    is_transient,
    paginate,
    request_args,
    resolve_credentials,
    split_endpoint,
    with_retries,
)

CREDS = Credentials("LTAI5tExampleKey9Z1x", "not-a-real-secret")


def pages(*sizes: int) -> dict:
    """A fake API: page i holds sizes[i] instances; tokens t1, t2, ..."""
    book = {}
    n = 0
    for i, size in enumerate(sizes):
        token = None if i == 0 else f"t{i}"
        nxt = f"t{i + 1}" if i + 1 < len(sizes) else ""
        book[token] = {"Instances": {"Instance": [{"InstanceId": f"i-{n + k}"} for k in range(size)]},
                       "NextToken": nxt}
        n += size
    return book


def test_paginate_reads_every_page_in_order() -> None:
    book = pages(100, 100, 37)
    asked = []

    def fetch(token):
        asked.append(token)
        return book[token]

    items = paginate(fetch)
    assert [i["InstanceId"] for i in items] == [f"i-{n}" for n in range(237)]
    assert asked == [None, "t1", "t2"]


def test_paginate_empty_result() -> None:
    assert paginate(lambda token: {"Instances": {"Instance": []}, "NextToken": ""}) == []
    assert paginate(lambda token: {"RequestId": "x"}) == []


def test_paginate_stops_on_a_repeated_token() -> None:
    with pytest.raises(EcsError, match="NextToken 'again' twice"):
        paginate(lambda token: {"Instances": {"Instance": [{}]}, "NextToken": "again"})


def throttled() -> ThrottlingException:
    return ThrottlingException(code="Throttling.User", status_code=400, message="code: 400, denied",
                               retry_after=1)


def test_retries_throttling_with_exponential_backoff() -> None:
    answers = [throttled(), ClientException(code="Throttling", status_code=400), "ok"]
    sleeps: list[float] = []

    def call():
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert with_retries(call, retries=4, delay=1.0, sleep=sleeps.append) == "ok"
    assert len(sleeps) == 2
    assert 1.0 <= sleeps[0] <= 1.25 and 2.0 <= sleeps[1] <= 2.5


def test_final_errors_are_not_retried() -> None:
    calls = []

    def call():
        calls.append(1)
        raise ClientException(code="InvalidAccessKeyId.NotFound", status_code=404)

    with pytest.raises(ClientException):
        with_retries(call, retries=4, delay=0.0, sleep=lambda s: None)
    assert len(calls) == 1


def test_retries_run_out() -> None:
    calls = []

    def call():
        calls.append(1)
        raise ServerException(code="ServiceUnavailable", status_code=503)

    with pytest.raises(ServerException) as info:
        with_retries(call, retries=2, delay=0.0, sleep=lambda s: None)
    assert len(calls) == 3 and info.value.attempts == 3


@pytest.mark.parametrize(("exc", "transient"), [
    (throttled(), True),
    (ServerException(code="InternalError", status_code=500), True),
    (ClientException(code="Forbidden.RAM", status_code=403), False),
    (ClientException(code="InvalidRegionId.NotFound", status_code=404), False),
])
def test_transient_classification(exc: Exception, transient: bool) -> None:
    assert is_transient(exc) is transient


@pytest.mark.parametrize(("code", "status", "expected"), [
    ("InvalidAccessKeyId.NotFound", 404, "ECS does not know access key ...9Z1x (from options) "
     "(InvalidAccessKeyId.NotFound, region cn-hangzhou at https://ecs.example): set access_key_id"),
    ("SignatureDoesNotMatch", 400, "the secret does not match access key ...9Z1x (from options) "
     "(SignatureDoesNotMatch, region cn-hangzhou at https://ecs.example): set access_key_secret"),
    ("Forbidden.RAM", 403, "access key ...9Z1x (from options) may not call ecs:DescribeInstances (Forbidden.RAM, "
     "region cn-hangzhou at https://ecs.example): attach the AliyunECSReadOnlyAccess policy"),
    ("InvalidRegionId.NotFound", 404, "ECS has no region 'cn-hangzhou' (InvalidRegionId.NotFound, endpoint "
     "https://ecs.example): fix `regions`"),
    ("Throttling.User", 400, "ECS kept throttling DescribeInstances in region cn-hangzhou at https://ecs.example "
     "(Throttling.User) after 1 attempts: raise `retries`"),
])
def test_each_api_error_has_one_clear_line(code: str, status: int, expected: str) -> None:
    exc = ClientException(code=code, status_code=status, message=f"code: {status}, whatever request id: R")
    text = explain(exc, "cn-hangzhou", "https://ecs.example", CREDS, 10)
    assert text.startswith(expected)
    assert "\n" not in text
    assert CREDS.access_key_secret not in text and CREDS.access_key_id not in text


def test_network_errors_are_explained() -> None:
    from darabonba.exceptions import RetryError, UnretryableException
    from darabonba.policy.retry import RetryPolicyContext

    exc = UnretryableException(RetryPolicyContext(exception=RetryError("Connection refused by peer")))
    exc.attempts = 5
    assert explain(exc, "cn-hangzhou", "http://127.0.0.1:9", CREDS, 2) == (
        "cannot reach the ECS API for region cn-hangzhou at http://127.0.0.1:9: connection refused after 5 "
        "attempt(s) with a 2s timeout: check `endpoint` and the network/proxy from this controller, or raise "
        "`timeout`")


def test_credentials_from_options_win() -> None:
    creds = resolve_credentials(" AK ", "SK", "", None, "/nonexistent/config.json")
    assert (creds.access_key_id, creds.access_key_secret, creds.security_token) == ("AK", "SK", None)
    assert "SK" not in repr(creds)


def test_half_a_key_is_refused() -> None:
    with pytest.raises(EcsError, match=r"also set access_key_secret \(ALIBABA_CLOUD_ACCESS_KEY_SECRET\)"):
        resolve_credentials("AK", None, None, None, "/nonexistent/config.json")


def test_missing_credentials(no_default_credentials: None) -> None:
    """Nothing in the settings, no profile, and the SDK's default chain finds nothing either."""
    with pytest.raises(EcsError) as info:
        resolve_credentials(None, None, None, None, "/nonexistent/config.json")
    assert str(info.value) == MISSING_CREDENTIALS + DEFAULT_CHAIN_HINT


def write_profiles(path: Path) -> str:
    path.write_text(json.dumps({"current": "main", "profiles": [
        {"name": "main", "mode": "AK", "access_key_id": "AKmain", "access_key_secret": "SKmain",
         "region_id": "cn-beijing"},
        {"name": "sts", "mode": "StsToken", "access_key_id": "STS.x", "access_key_secret": "SKsts",
         "sts_token": "tok"},
        {"name": "role", "mode": "RamRoleArn", "access_key_id": "a", "access_key_secret": "b"},
    ]}))
    return str(path)


def test_profile_file(tmp_path: Path) -> None:
    path = write_profiles(tmp_path / "config.json")
    current = resolve_credentials(None, None, None, None, path)
    assert (current.access_key_id, current.region, current.source) == ("AKmain", "cn-beijing", "profile main")
    sts = resolve_credentials(None, None, None, "sts", path)
    assert (sts.access_key_id, sts.security_token) == ("STS.x", "tok")
    with pytest.raises(EcsError, match="uses mode 'RamRoleArn'; this inventory supports AK and StsToken"):
        resolve_credentials(None, None, None, "role", path)
    with pytest.raises(EcsError, match=r"profile 'nope' is not in .* \(profiles: main, role, sts\)"):
        resolve_credentials(None, None, None, "nope", path)


def test_endpoints() -> None:
    assert split_endpoint(None, "cn-hangzhou") == (None, "HTTPS")
    assert split_endpoint("http://127.0.0.1:8950/", "x") == ("127.0.0.1:8950", "HTTP")
    assert split_endpoint("ecs-vpc.{region}.aliyuncs.com", "cn-shanghai") == ("ecs-vpc.cn-shanghai.aliyuncs.com",
                                                                              "HTTPS")
    with pytest.raises(EcsError, match="is not an http"):
        split_endpoint("ftp://x", "r")


def test_request_args_from_filters() -> None:
    args = request_args("cn-hangzhou", {"instance_type_family": "ecs.sccgn6", "vswitch_id": "vsw-1",
                                        "status": "Running", "tags": {"cluster": "bert", "any": None},
                                        "instance_types": ["ecs.sccgn6.24xlarge"], "instance_ids": ["i-1"]})
    assert args == {"region_id": "cn-hangzhou", "max_results": 100, "instance_type_family": "ecs.sccgn6",
                    "v_switch_id": "vsw-1", "status": "Running", "instance_type": "ecs.sccgn6.24xlarge",
                    "instance_ids": '["i-1"]', "tag": [("cluster", "bert"), ("any", None)]}
    assert "status" not in request_args("r", {"status": "any"})
