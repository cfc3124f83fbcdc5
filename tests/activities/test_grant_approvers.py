"""A grant's approver is matched against the call's allowed names canonically (``covers``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from toolcalls.activities.grants import covers
from toolcalls.workflows.models.approval import GrantScope
from toolcalls.workflows.models.grant import Grant, GrantQuery

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _grant(approver: str) -> Grant:
    return Grant(
        grant_id="toolcalls-grant-r1",
        tool="probe_write",
        digest="d1",
        capabilities=["filesystem.write"],
        scope=GrantScope.DEPLOYMENT,
        parent_id=None,
        approver=approver,
        granted_at=NOW,
        expires_at=NOW + timedelta(hours=1),
        granted_in="call-1",
        request_id="r1",
    )


def _query(approvers: list[str] | None) -> GrantQuery:
    return GrantQuery(
        tool="probe_write",
        digest="d1",
        capabilities=["filesystem.write"],
        parent_id=None,
        approvers=approvers,
    )


def test_a_grant_by_another_spelling_of_an_allowed_name_covers_the_call() -> None:
    # Made before names were canonical: the grant holds the name as it was sent.
    assert covers(_grant("Alice "), _query(["alice", "bob"]), NOW)
    assert covers(_grant("alice"), _query(["alice"]), NOW)
    assert covers(_grant("anyone"), _query(None), NOW)


def test_a_grant_by_someone_else_or_an_invalid_name_does_not() -> None:
    assert not covers(_grant("carol"), _query(["alice", "bob"]), NOW)
    assert not covers(_grant("alice\u200b"), _query(["alice"]), NOW)
