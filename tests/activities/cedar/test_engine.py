"""Cedar policy sets with a real ``cedarpy``, no server: targets as resource attributes, the
principal's attributes, file positions of parse errors, and failing closed."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from mcp.shared.exceptions import MCPError

from toolcalls.activities.cedar import PolicyError, PolicySet, PolicySetSettings, Subject, load_all
from toolcalls.activities.cedar.targets import targets
from toolcalls.worker.mcp.calls import principal_of
from toolcalls.worker.mcp.oauth import PRINCIPAL_KEY as SCOPE_PRINCIPAL
from toolcalls.workflows.models.principal import Principal

MAIL = """@id("everyone")
permit(principal, action, resource);

// Mail leaves the company only for acme's own staff.
@id("mail-stays-home")
forbid(principal, action == Action::"email.send", resource)
when { resource has domains && !(["example.com"].containsAll(resource.domains)) }
unless { principal has tenant && principal.tenant == "acme" };
"""


def load(tmp_path: Path, text: str, **settings: object) -> PolicySet:
    path = tmp_path / "p.cedar"
    path.write_text(text)
    return PolicySet.load(PolicySetSettings(files=[path], **settings))


def mail(to: list[str], principal: Principal | None = None) -> Subject:
    arguments = {"to": to, "subject": "hi", "body": "secret body"}
    return Subject("send_email", ["email.send"], arguments, "write", principal)


def test_a_recipient_domain_decides(tmp_path: Path) -> None:
    policies = load(tmp_path, MAIL)
    assert policies.evaluate(mail(["a@example.com", "B@Example.com"])).effect == "allow"
    outside = policies.evaluate(mail(["a@example.com", "x@elsewhere.org"]))
    assert (outside.effect, outside.policies) == ("deny", ["mail-stays-home"])
    staff = Principal(id="ann", attributes={"tenant": "acme"})
    assert policies.evaluate(mail(["x@elsewhere.org"], staff)).effect == "allow"


def test_targets_take_the_target_and_nothing_else() -> None:
    assert targets({"path": "/srv/a", "content": "x"}) == {"path": "/srv/a"}
    assert targets({"url": "https://API.example.com:8443/x?q=1"}) == {"host": "api.example.com"}
    assert targets({"to": ["a@x.org"], "cc": "b@y.org", "body": "z"}) == {
        "domains": ["x.org", "y.org"]
    }
    assert targets({"expression": "1 + 1"}) == {}


def test_a_parse_error_names_file_line_and_column(tmp_path: Path) -> None:
    text = (
        "permit(principal, action, resource);\n\n"
        "forbid(principal, action, resource)\n  when { 1 === 2 };\n"
    )
    with pytest.raises(PolicyError, match=r"p\.cedar:4:\d+: unexpected token"):
        load(tmp_path, text)


def test_without_a_permit_cedar_denies(tmp_path: Path) -> None:
    verdict = load(tmp_path, '@id("x")\nforbid(principal, action, resource) when { false };\n')
    result = verdict.evaluate(mail(["a@example.com"]))
    assert (result.effect, result.policies) == ("deny", [])
    assert "no policy permits it" in result.reason()


def test_two_sets_may_not_share_a_name(tmp_path: Path) -> None:
    path = tmp_path / "p.cedar"
    path.write_text("permit(principal, action, resource);\n")
    one = PolicySetSettings(files=[path])
    with pytest.raises(PolicyError, match="two sets are named 'cedar'"):
        load_all([one, one])


def test_the_mcp_front_takes_the_principal_from_the_request_scope() -> None:
    def ctx(scope: dict[str, object] | None) -> object:
        return SimpleNamespace(request=SimpleNamespace(scope=scope) if scope is not None else None)

    assert principal_of(ctx(None)) is None  # stdio: no HTTP request
    assert principal_of(ctx({})) is None  # HTTP without OAuth
    found = principal_of(ctx({SCOPE_PRINCIPAL: "oauth:https://idp.example#123"}))
    assert found == Principal(id="oauth:https://idp.example#123")
    with pytest.raises(MCPError, match="not a valid principal id"):
        principal_of(ctx({SCOPE_PRINCIPAL: " spaced "}))
