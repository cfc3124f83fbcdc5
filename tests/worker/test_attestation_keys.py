"""The deployment's attestation keys: configured, or made once in the state directory and kept."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support.payloads import keys
from toolcalls.activities.attestations import Attestor, Claim, Run
from toolcalls.worker.attestation import STATE_KEYS, deployment_attestor
from toolcalls.worker.config import ConfigError, parse_config
from toolcalls.workflows.models.attest import AttestedDecision

RUN = Run("default", "call-1", "run-1")
CLAIM = Claim("c", "d" * 64, None, AttestedDecision.PLANNED)
NOW = datetime(2026, 12, 4, tzinfo=UTC)


def attests_alike(first: Attestor, second: Attestor) -> bool:
    """Whether ``second`` accepts what ``first`` attests."""
    return second.problem(RUN, first.issue(RUN, CLAIM), CLAIM, NOW) is None


def test_a_worker_without_keys_makes_one_and_keeps_it(tmp_path: Path) -> None:
    state = tmp_path / "state"
    config = parse_config({"state_dir": str(state)})
    first = deployment_attestor(config, {})
    path = state / STATE_KEYS
    made = path.read_text()
    assert path.stat().st_mode & 0o777 == 0o600
    again = deployment_attestor(config, {})
    assert path.read_text() == made
    assert attests_alike(first, again)
    # Another state directory is another key: its worker refuses this one's attestations.
    elsewhere = deployment_attestor(parse_config({"state_dir": str(tmp_path / "other")}), {})
    problem = elsewhere.problem(RUN, first.issue(RUN, CLAIM), CLAIM, NOW)
    assert problem is not None
    assert "which is not one of this worker's attestation keys" in problem


def test_workers_starting_at_once_agree_on_one_key(tmp_path: Path) -> None:
    config = parse_config({"state_dir": str(tmp_path / "state")})
    made: list[Attestor] = []
    threads = [
        threading.Thread(target=lambda: made.append(deployment_attestor(config, {})))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 8
    assert all(attests_alike(made[0], other) for other in made[1:])
    assert [p.name for p in (tmp_path / "state").iterdir()] == [STATE_KEYS]


def test_configured_keys_and_the_former_section_name(tmp_path: Path) -> None:
    environ = {"KEYS": keys("a2", "a1")}
    state = str(tmp_path / "state")
    configured = deployment_attestor(
        parse_config({"state_dir": state, "attestation": {"keys_env": "KEYS"}}), environ
    )
    former = deployment_attestor(
        parse_config({"state_dir": state, "inline": {"keys_env": "KEYS"}}), environ
    )
    assert configured.issue(RUN, CLAIM).key_id == "a2"
    assert attests_alike(configured, former)
    assert not (tmp_path / "state").exists()  # nothing made when keys are configured
    both = parse_config(
        {"attestation": {"keys_env": "KEYS"}, "inline": {"keys_env": "KEYS"}},
    )
    with pytest.raises(ConfigError, match=r"^set the keys in \[attestation\] only"):
        deployment_attestor(both, environ)
    with pytest.raises(ConfigError, match=r"attestation\.keys_env: the variable KEYS is not set"):
        deployment_attestor(parse_config({"attestation": {"keys_env": "KEYS"}}), {})


def test_an_attestation_binds_run_claim_decision_and_expiry() -> None:
    attestor = Attestor([("k", b"k" * 32)])
    soon = NOW + timedelta(minutes=1)
    claim = Claim("c", "d" * 64, ["a"], AttestedDecision.APPROVED, "alice", soon)
    attestation = attestor.issue(RUN, claim)
    assert attestor.problem(RUN, attestation, claim, NOW) is None
    changed = {
        "run": (Run("default", "call-1", "run-2"), attestation, claim),
        "call": (RUN, attestation, Claim("other", claim.digest, ["a"])),
        "digest": (RUN, attestation, Claim("c", "e" * 64, ["a"])),
        "visible": (RUN, attestation, Claim("c", claim.digest, ["a", "b"])),
        "decision": (
            RUN,
            attestation.model_copy(update={"decision": AttestedDecision.GRANTED}),
            claim,
        ),
        "approver": (RUN, attestation.model_copy(update={"approver": "mallory"}), claim),
    }
    for what, (run, sent, claimed) in changed.items():
        problem = attestor.problem(run, sent, claimed, NOW)
        assert problem == (
            "its attestation is not the deployment's for this workflow run, call and decision"
        ), what
    expired = attestor.problem(RUN, attestation, claim, soon)
    assert expired == f"its attestation expired at {soon.isoformat()}"
