"""The ``[[http]]`` tools' path rules and argument model: fixed origin and base path.

Each SECURITY-CASES ``http_request (fixed base URL)`` path case is refused here by the argument
model (so the plan refuses it and no request is made); the request tests show the same refusal
at execution, with a server that records nothing.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from pydantic import ValidationError

from toolcalls.activities.network.http_api import arguments_model, encode_body, http_capabilities
from toolcalls.activities.network.http_paths import (
    MAX_QUERY_PARAMS,
    PathProblem,
    build_url,
    check_path,
    normalise_base_url,
)
from toolcalls.activities.network.settings import HttpToolSettings

BASE = "https://api.example.com/v1/"

ESCAPES = [
    "../admin",
    "items/../../admin",
    "./items",
    "items/.",
    "https://evil.com/x",
    "http:evil.com",
    "//evil.com/x",
    "///evil.com/x",
    "\\\\evil.com/x",
    "items\\..\\admin",
    "\uff0e\uff0e/admin",  # FULLWIDTH FULL STOP: ".." after NFKC
    "items\uff0f..\uff0fadmin",  # FULLWIDTH SOLIDUS
    "%2e%2e/admin",
    "%2E%2E/admin",
    ".%2e/admin",
    "items%2f..%2fadmin",
    "items%5c..%5cadmin",
    "%252e%252e/admin",
    "items%25",
    "items?admin=1",
    "items#frag",
    "items%0d%0aHost:%20evil.com",
    "items\r\nHost: evil.com",
    "items\x00.json",
    "items%00.json",
    "items%zz",
    "items%ef%bc%8e%ef%bc%8e/admin",  # U+FF0E percent-encoded
    "items%ff",
    "a//b",
    "items\u202e",
    "items with space",
]


@pytest.mark.parametrize("path", ESCAPES)
def test_every_escape_is_refused(path: str) -> None:
    with pytest.raises(PathProblem):
        check_path(path)
    with pytest.raises(PathProblem):
        build_url(BASE, path, [])
    with pytest.raises(ValidationError) as caught:
        arguments_model(HttpToolSettings(base_url=BASE)).model_validate({"path": path})
    assert [err["loc"] for err in caught.value.errors()] == [("path",)]


@pytest.mark.parametrize(
    ("path", "url"),
    [
        ("", BASE),
        ("/", BASE),
        ("items", BASE + "items"),
        ("/items", BASE + "items"),
        ("items/", BASE + "items/"),
        ("items/42/tags", BASE + "items/42/tags"),
        ("items/a%20b", BASE + "items/a%20b"),
        ("items/café", BASE + "items/caf%C3%A9"),
        ("projects/p1:run", BASE + "projects/p1:run"),
        ("items/v1.2..3", BASE + "items/v1.2..3"),
        ("items/%3F", BASE + "items/%3F"),
        ("items/[x]", BASE + "items/%5Bx%5D"),
    ],
)
def test_paths_stay_below_the_base(path: str, url: str) -> None:
    assert build_url(BASE, path, []) == url


def test_query_values_are_encoded_never_parsed() -> None:
    url = build_url(BASE, "items", [("q", "a&b=c"), ("x y", "1/2?#"), ("crlf", "\r\n")])
    assert url == BASE + "items?q=a%26b%3Dc&x%20y=1%2F2%3F%23&crlf=%0D%0A"


def test_query_pairs_keep_their_order_and_repeats() -> None:
    url = build_url(BASE, "items", [("tag", "b"), ("n", "1"), ("tag", "a")])
    assert url == BASE + "items?tag=b&n=1&tag=a"


def test_the_full_url_is_bounded() -> None:
    with pytest.raises(PathProblem, match="URL would have"):
        build_url(BASE, "items", [("q", "x" * 2_100)])


@pytest.mark.parametrize(
    ("given", "normal"),
    [
        ("https://API.Example.com/v1", "https://api.example.com/v1/"),
        ("https://api.example.com", "https://api.example.com/"),
        ("https://api.example.com:8443/v1/", "https://api.example.com:8443/v1/"),
        ("HTTPS://api.example.com/a/b", "https://api.example.com/a/b/"),
    ],
)
def test_base_urls_are_normalised_to_end_with_a_slash(given: str, normal: str) -> None:
    assert normalise_base_url(given, allow_http=False) == normal


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://api.example.com/", "allow_http"),
        ("ftp://api.example.com/", "http or https"),
        ("https://user:pw@api.example.com/", "credentials"),
        ("https://api.example.com/v1?key=1", "query or fragment"),
        ("https://api.example.com/v1#x", "query or fragment"),
        ("https://api.example.com/v1/../admin", "'..'"),
        ("https:///v1", "no host"),
        ("https://api.example.com:99999/", "port"),
        ("https://api.example.com/v1\r\n", "control"),
    ],
)
def test_bad_base_urls_are_refused(url: str, problem: str) -> None:
    with pytest.raises(PathProblem, match=problem):
        normalise_base_url(url, allow_http=False)


def test_plain_http_needs_allow_http() -> None:
    assert normalise_base_url("http://10.0.0.5:8080/api", allow_http=True) == (
        "http://10.0.0.5:8080/api/"
    )


def model(**settings: Any) -> Any:
    return arguments_model(HttpToolSettings(base_url=BASE, **settings))


def test_the_model_cannot_supply_headers_or_other_arguments() -> None:
    for extra in ("headers", "Host", "Authorization", "Cookie", "X-Forwarded-For", "url"):
        with pytest.raises(ValidationError) as caught:
            model().model_validate({"path": "items", extra: "evil"})
        assert caught.value.errors()[0]["type"] == "extra_forbidden"


def test_methods_are_limited_to_the_allowed_ones() -> None:
    read_only = model()
    assert read_only.model_validate({}).method == "GET"
    assert read_only.model_validate({"method": "head"}).method == "HEAD"
    with pytest.raises(ValidationError, match="method"):
        read_only.model_validate({"method": "POST"})
    writes = model(allowed_methods=["post", "DELETE"])
    assert writes.model_validate({"method": "delete"}).method == "DELETE"
    # GET is the spec's default; a tool without GET needs the method named.
    with pytest.raises(ValidationError, match="method"):
        writes.model_validate({"method": None})


def test_get_and_head_refuse_a_body() -> None:
    args = model(allowed_methods=["GET", "HEAD", "POST"])
    for method in ("GET", "HEAD"):
        for body in ({"a": 1}, '{"a": 1}'):
            with pytest.raises(ValidationError, match="no body"):
                args.model_validate({"method": method, "body": body})
    assert args.model_validate({"method": "GET", "body": None}).body is None
    assert args.model_validate({"method": "POST", "body": [1, "x"]}).body == [1, "x"]


def test_the_body_is_bounded_by_max_request_bytes() -> None:
    args = model(allowed_methods=["POST"], max_request_bytes=16)
    assert encode_body("é" * 7) == ('"' + "é" * 7 + '"').encode()  # compact UTF-8: 16 bytes
    # The bound is on the bytes sent, not on the JSON text given: escapes and spaces are free.
    args.model_validate({"method": "POST", "body": json.dumps("é" * 7, indent=4)})
    with pytest.raises(ValidationError, match="17 bytes as JSON; the limit is 16"):
        args.model_validate({"method": "POST", "body": json.dumps("é" * 7 + "x")})
    deep: Any = 1
    for _ in range(100):
        deep = [deep]
    with pytest.raises(ValidationError, match="deeper"):
        model(allowed_methods=["POST"]).model_validate({"method": "POST", "body": deep})


def test_query_is_a_list_of_string_pairs() -> None:
    args = model()
    pairs = [
        {"name": "tag", "value": "b"},
        {"name": "n", "value": "1"},
        {"name": "tag", "value": "a"},
    ]
    given = args.model_validate({"query": pairs})
    assert given.query_pairs == [("tag", "b"), ("n", "1"), ("tag", "a")]
    assert given.model_dump(mode="json")["query"] == pairs
    # A JSON object of names to values (the spec's form) is the same query, in its order.
    assert args.model_validate({"query": {"tag": "b", "n": "1"}}).model_dump(mode="json") == (
        args.model_validate({"query": pairs[:2]}).model_dump(mode="json")
    )
    assert args.model_validate({"query": None}).query_pairs == []
    for bad, where in [
        ({"limit": 10}, ("query", 0, "value")),
        ([{"name": "limit", "value": 10}], ("query", 0, "value")),
        ({"": "x"}, ("query", 0, "name")),
        ([{"name": "", "value": "x"}], ("query", 0, "name")),
        ([{"name": "a"}], ("query", 0, "value")),
        ([{"name": "a", "value": "x", "extra": 1}], ("query", 0, "extra")),
        ([["a", "x"]], ("query", 0)),
        ({str(i): "x" for i in range(MAX_QUERY_PARAMS + 1)}, ("query",)),
    ]:
        with pytest.raises(ValidationError) as caught:
            args.model_validate({"query": bad})
        assert [err["loc"] for err in caught.value.errors()] == [where], bad


def test_the_body_is_json_text() -> None:
    args = model(allowed_methods=["POST"])
    for text, body in [('{"a": [1, null]}', {"a": [1, None]}), ('"hi"', "hi"), ("7", 7)]:
        given = args.model_validate({"method": "POST", "body": text})
        assert given.body == body
        # What the plan records validates again to the same body.
        assert args.model_validate(given.model_dump(mode="json")).body == body
    assert args.model_validate({"method": "POST", "body": {"a": 1}}).body == {"a": 1}
    assert args.model_validate({"method": "POST", "body": "null"}).body is None
    for text, problem in [("hi", "is not JSON text"), ("[NaN]", "NaN is not JSON")]:
        with pytest.raises(ValidationError, match=re.escape(problem)) as caught:
            args.model_validate({"method": "POST", "body": text})
        assert [err["loc"] for err in caught.value.errors()] == [("body",)]


def test_capabilities_follow_the_method() -> None:
    args = model(allowed_methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
    for method in ("GET", "HEAD"):
        assert http_capabilities(args.model_validate({"method": method})) == ["network.read"]
    for method in ("POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
        assert http_capabilities(args.model_validate({"method": method})) == ["network.write"]
