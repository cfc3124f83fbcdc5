"""The guarded service client every Google, Graph and CalDAV request takes.

Replayed through ``httpx.MockTransport`` behind the production guard: one request per call, no
redirects followed, a 2 MiB cap, credentials read afresh for every request and never in a
message, statuses mapped to the tool errors the spec names, continuation links held to the first
request's host and collection.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.support.http_servers import MapResolver
from toolcalls.activities.network.failures import NetworkUnavailable, TooLarge
from toolcalls.activities.network.service import (
    MAX_RESPONSE_BYTES,
    CredentialError,
    LinkRefused,
    Secret,
    ServiceAnswerError,
    ServiceClient,
    ServiceStatusError,
    basic_auth,
    bearer_token,
    continuation,
    service_failure,
    service_guard,
)
from toolcalls.workflows.models.call import ErrorCode

HOST = "api.service.test"
BASE = f"https://{HOST}/v1/things"
TOKEN = "ya29.s3cr3t-token"
REMOTE_TEXT = "internal detail: user alice@example.com, token ya29.s3cr3t-token"

Handler = Callable[[httpx.Request], httpx.Response]


class Recorder:
    """A MockTransport handler answering with ``answer`` and keeping every request."""

    def __init__(self, answer: Handler) -> None:
        self.answer = answer
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.answer(request)


def client(
    answer: Handler, environ: dict[str, str] | None = None, **options: object
) -> tuple[ServiceClient, Recorder]:
    recorder = Recorder(answer)
    guard = service_guard(
        resolver=MapResolver({HOST: ["203.0.113.7"]}), transport=httpx.MockTransport(recorder)
    )
    env = {"SERVICE_TOKEN": TOKEN} if environ is None else environ
    made = ServiceClient(
        "test service",
        credentials=bearer_token(Secret(env="SERVICE_TOKEN"), env),
        guard=guard,
        **options,  # type: ignore[arg-type]
    )
    return made, recorder


def ok(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"items": [1]})


async def test_a_json_answer_and_the_token_read_when_the_request_is_sent() -> None:
    env = {"SERVICE_TOKEN": "first"}
    service, recorder = client(ok, env)
    answer = await service.request("GET", BASE, params={"q": "a b+c"})
    env["SERVICE_TOKEN"] = "second"  # a refresher rotated it
    await service.request("GET", BASE)
    assert answer.status_code == 200
    assert answer.json_object() == {"items": [1]}
    first, second = recorder.requests
    assert first.url.params["q"] == "a b+c"
    assert first.headers["authorization"] == "Bearer first"
    assert second.headers["authorization"] == "Bearer second"


async def test_a_token_file_is_read_again_for_every_request(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("one\n")
    recorder = Recorder(ok)
    service = ServiceClient(
        "test service",
        credentials=bearer_token(Secret(file=token_file), {}),
        guard=service_guard(
            resolver=MapResolver({HOST: ["203.0.113.7"]}), transport=httpx.MockTransport(recorder)
        ),
    )
    await service.request("GET", BASE)
    token_file.write_text("two")
    await service.request("GET", BASE)
    assert [r.headers["authorization"] for r in recorder.requests] == ["Bearer one", "Bearer two"]


@pytest.mark.parametrize(
    ("environ", "problem"),
    [
        ({}, "environment variable SERVICE_TOKEN is not set or empty"),
        ({"SERVICE_TOKEN": "  "}, "environment variable SERVICE_TOKEN is not set or empty"),
        ({"SERVICE_TOKEN": "t0k3n\nX"}, "holds characters a header cannot carry"),
    ],
)
async def test_a_missing_or_unusable_token_sends_nothing(
    environ: dict[str, str], problem: str
) -> None:
    service, recorder = client(ok, environ)
    with pytest.raises(CredentialError) as raised:
        await service.request("GET", BASE)
    assert problem in raised.value.reason
    assert recorder.requests == []
    error = service_failure("tool", "test service", raised.value, write=True)
    assert error.type == ErrorCode.CONFIGURATION_ERROR.value
    assert "t0k3n" not in error.message


async def test_an_unreadable_token_file_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(CredentialError, match=r"cannot read file .*missing"):
        await Secret(file=tmp_path / "missing").read({})


def test_a_secret_has_exactly_one_source(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        Secret()
    with pytest.raises(ValueError, match="exactly one"):
        Secret(env="A", file=tmp_path / "b")


async def test_basic_auth_reads_the_password_per_request() -> None:
    env = {"DAV_PASSWORD": "pw1"}
    recorder = Recorder(ok)
    service = ServiceClient(
        "dav",
        credentials=basic_auth("alice", Secret(env="DAV_PASSWORD"), env),
        guard=service_guard(
            resolver=MapResolver({HOST: ["203.0.113.7"]}), transport=httpx.MockTransport(recorder)
        ),
    )
    await service.request("GET", BASE)
    env["DAV_PASSWORD"] = "pw2"
    await service.request("GET", BASE)
    assert [r.headers["authorization"] for r in recorder.requests] == [
        "Basic YWxpY2U6cHcx",
        "Basic YWxpY2U6cHcy",
    ]


async def test_a_redirect_is_an_error_and_never_followed() -> None:
    def moved(request: httpx.Request) -> httpx.Response:
        return httpx.Response(302, headers={"Location": "https://elsewhere.test/steal"})

    service, recorder = client(moved)
    with pytest.raises(ServiceStatusError) as raised:
        await service.request("GET", BASE)
    assert raised.value.status_code == 302
    assert len(recorder.requests) == 1
    error = service_failure("tool", "test service", raised.value, write=False)
    assert error.type == ErrorCode.EXECUTION_FAILED.value
    assert "redirects are not followed" in error.message


async def test_plain_http_is_refused_unless_the_caller_allows_it() -> None:
    service, recorder = client(ok)
    with pytest.raises(Exception, match="scheme must be one of https"):
        await service.request("GET", f"http://{HOST}/v1/things")
    assert recorder.requests == []


async def test_an_answer_over_two_mebibytes_is_cut_off() -> None:
    def huge(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b"[" + b"1," * MAX_RESPONSE_BYTES + b"1]")

    service, _ = client(huge)
    with pytest.raises(TooLarge) as raised:
        await service.request("GET", BASE)
    read = service_failure("tool", "test service", raised.value, write=False)
    assert read.type == ErrorCode.OUTPUT_TOO_LARGE.value
    written = service_failure("tool", "test service", raised.value, write=True)
    assert written.type == ErrorCode.UNCERTAIN.value
    assert written.details[0]["output"] == {"status_code": 200}


async def test_an_answer_of_exactly_the_cap_is_read() -> None:
    body = b'"' + b"x" * (MAX_RESPONSE_BYTES - 2) + b'"'

    def full(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"Content-Type": "application/json"})

    service, _ = client(full)
    answer = await service.request("GET", BASE)
    assert len(answer.body) == MAX_RESPONSE_BYTES


def remote_error(status: int, **headers: str) -> Handler:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            status, json={"error": {"message": REMOTE_TEXT, "code": status}}, headers=headers
        )

    return answer


@pytest.mark.parametrize(
    ("status", "write", "code", "retryable", "says"),
    [
        (401, False, ErrorCode.CONFIGURATION_ERROR, False, "access token"),
        (403, False, ErrorCode.CONFIGURATION_ERROR, False, "scope or permission"),
        (404, False, ErrorCode.CONFIGURATION_ERROR, False, "check the calendar id"),
        (409, True, ErrorCode.PRECONDITION_FAILED, False, "conflict"),
        (429, False, ErrorCode.EXECUTION_FAILED, True, "rate limited"),
        (429, True, ErrorCode.EXECUTION_FAILED, False, "nothing was changed"),
        (500, False, ErrorCode.EXECUTION_FAILED, True, "service error"),
        (503, True, ErrorCode.UNCERTAIN, False, "may have been applied"),
        (400, False, ErrorCode.EXECUTION_FAILED, False, "answered 400"),
    ],
)
async def test_error_statuses_are_typed_and_the_remote_body_stays_out(
    status: int, write: bool, code: ErrorCode, retryable: bool, says: str
) -> None:
    service, recorder = client(remote_error(status))
    with pytest.raises(ServiceStatusError) as raised:
        await service.request("POST" if write else "GET", BASE, json_body={"a": 1})
    assert raised.value.status_code == status
    assert len(recorder.requests) == 1  # never retried here
    error = service_failure(
        "tool", "test service", raised.value, write=write, not_found="check the calendar id"
    )
    assert error.type == code.value
    assert error.non_retryable is not retryable
    assert says in error.message
    assert error.details[0]["output"] == {"status_code": status}
    for leaked in ("alice", "s3cr3t", "internal detail"):
        assert leaked not in error.message
        assert leaked not in str(raised.value)


async def test_a_404_without_a_hint_is_the_services_answer() -> None:
    service, _ = client(remote_error(404))
    with pytest.raises(ServiceStatusError) as raised:
        await service.request("GET", BASE)
    error = service_failure("tool", "test service", raised.value, write=False)
    assert error.type == ErrorCode.EXECUTION_FAILED.value


async def test_retry_after_becomes_the_retry_delay_of_a_read() -> None:
    service, _ = client(remote_error(429, **{"Retry-After": "7"}))
    with pytest.raises(ServiceStatusError) as raised:
        await service.request("GET", BASE)
    error = service_failure("tool", "test service", raised.value, write=False)
    assert error.next_retry_delay is not None
    assert error.next_retry_delay.total_seconds() == 7
    assert "retry after 7 s" in error.message


async def test_googles_rate_limit_403_is_a_rate_limit() -> None:
    def limited(request: httpx.Request) -> httpx.Response:
        body = {"error": {"errors": [{"reason": "rateLimitExceeded", "message": REMOTE_TEXT}]}}
        return httpx.Response(403, json=body)

    service, _ = client(limited)
    with pytest.raises(ServiceStatusError) as raised:
        await service.request("GET", BASE)
    assert raised.value.rate_limited
    error = service_failure("tool", "test service", raised.value, write=False)
    assert (error.type, error.non_retryable) == (ErrorCode.EXECUTION_FAILED.value, False)


async def test_statuses_a_caller_accepts_are_returned() -> None:
    service, _ = client(remote_error(412))
    answer = await service.request("PUT", BASE, content=b"x", accept=(412,))
    assert answer.status_code == 412


async def test_a_2xx_that_is_not_json_is_an_unreadable_answer() -> None:
    def html(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text=REMOTE_TEXT, headers={"Content-Type": "text/html"})

    service, _ = client(html)
    answer = await service.request("GET", BASE)
    with pytest.raises(ServiceAnswerError) as raised:
        answer.json()
    read = service_failure("tool", "test service", raised.value, write=False)
    assert read.type == ErrorCode.EXECUTION_FAILED.value
    assert "alice" not in read.message
    written = service_failure("tool", "test service", raised.value, write=True)
    assert written.type == ErrorCode.UNCERTAIN.value


async def test_an_outage_is_retryable_for_a_read_and_uncertain_for_a_sent_write() -> None:
    def broken(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadError("connection reset")

    service, _ = client(broken)
    with pytest.raises(NetworkUnavailable) as raised:
        await service.request("POST", BASE, json_body={})
    read = service_failure("tool", "test service", raised.value, write=False)
    assert (read.type, read.non_retryable) == (ErrorCode.NETWORK_UNAVAILABLE.value, False)
    written = service_failure("tool", "test service", raised.value, write=True)
    assert written.type == ErrorCode.UNCERTAIN.value


async def test_a_write_that_never_connected_is_an_outage_not_uncertain() -> None:
    def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    service, _ = client(refused)
    with pytest.raises(NetworkUnavailable) as raised:
        await service.request("POST", BASE, json_body={})
    written = service_failure("tool", "test service", raised.value, write=True)
    assert written.type == ErrorCode.NETWORK_UNAVAILABLE.value


FIRST = "https://graph.example.test/v1.0/users/u%2F1/calendarView?startDateTime=a&endDateTime=b"


@pytest.mark.parametrize(
    "link",
    [
        "https://graph.example.test/v1.0/users/u%2F1/calendarView?startDateTime=a&$skiptoken=x",
        "https://GRAPH.example.test:443/v1.0/users/u%2f1/calendarView?$skiptoken=x",
        "https://graph.example.test/v1.0/users/u%2F1/calendar%56iew?$skiptoken=x",
    ],
)
def test_a_next_link_on_the_same_host_and_collection_is_accepted(link: str) -> None:
    accepted = continuation(link, FIRST, fixed_params=("startDateTime", "endDateTime"))
    assert accepted.host == "graph.example.test"


@pytest.mark.parametrize(
    ("link", "problem"),
    [
        ("https://evil.test/v1.0/users/u%2F1/calendarView?$skiptoken=x", "host"),
        ("https://graph.example.test:8443/v1.0/users/u%2F1/calendarView", "host"),
        ("http://graph.example.test/v1.0/users/u%2F1/calendarView", "not https"),
        ("https://a:b@graph.example.test/v1.0/users/u%2F1/calendarView", "credentials"),
        ("https://graph.example.test/v1.0/users/other/calendarView", "another collection"),
        ("https://graph.example.test/v1.0/users/u/1/calendarView", "another collection"),
        ("https://graph.example.test/v1.0/users/u%2F1/calendarView/../../x", "another collection"),
        ("https://graph.example.test/v1.0/users/u%2F1/calendarView?endDateTime=z", "endDateTime"),
        ("https://graph.example.test/v1.0/users/u%2F1/calendarView#x", "fragment"),
        ("not a url at all", "not"),
    ],
)
def test_a_next_link_from_elsewhere_is_refused(link: str, problem: str) -> None:
    with pytest.raises(LinkRefused, match=problem):
        continuation(link, FIRST, fixed_params=("startDateTime", "endDateTime"))
