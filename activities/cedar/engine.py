"""Cedar policy sets, loaded once at the worker's start and evaluated at each call's plan.

A call is put to Cedar as one request per action: the tool (``Action::"write_file"``) and each
capability it needs (``Action::"filesystem.write"``), for the principal (``Principal::"alice"``,
its attributes; ``Principal::"anonymous"`` when the request names none) on the resource
``Tool::"write_file"`` (its ``side_effect`` and, where it has one, its target: ``path``, ``host``,
``domains`` of its recipients, ``calendar``), in a context of the call's ``profile``, ``parent``,
``side_effect``, ``capabilities`` and the request's own policy (``policy_default``,
``policy_rules``). The call is permitted when every request is; a ``forbid`` (or no ``permit``)
on any denies it; an evaluation error denies it (fail closed). A ``permit`` that decided and is
annotated ``@approval("required")`` or ``@approvers("GROUP")`` asks for an approval.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolcalls.activities.cedar.settings import PolicySetSettings
from toolcalls.activities.cedar.source import PolicyError, Statement, parse_problem, statements
from toolcalls.activities.cedar.targets import targets
from toolcalls.workflows.models.call import CapabilityPolicy
from toolcalls.workflows.models.principal import Principal
from toolcalls.workflows.models.verdict import MAX_VERDICT_ERRORS, MAX_VERDICT_IDS, PolicyVerdict

ANONYMOUS = "anonymous"
"""The principal id Cedar sees for a request that names none."""
APPROVAL = "approval"
APPROVERS = "approvers"
MAX_ERROR_CHARS = 300


@dataclass(frozen=True)
class Subject:
    """What a policy set is asked about one call (never the argument values themselves, only
    the targets taken from them)."""

    tool: str
    capabilities: Sequence[str]
    arguments: Mapping[str, Any]
    side_effect: str
    principal: Principal | None = None
    profile: str | None = None
    parent: str | None = None
    policy: CapabilityPolicy | None = None


def _cedar() -> Any:
    """``cedarpy``, imported when a set is first loaded: a deployment without ``[[policies]]``
    (and every command that only reads the configuration) does not pay for its import."""
    try:
        import cedarpy
    except ImportError:  # the cedar extra is not installed
        raise PolicyError(
            "[[policies]] needs the cedar extra: pip install 'toolcalls[cedar]' (cedarpy)"
        ) from None
    return cedarpy


@dataclass
class PolicySet:
    """One ``[[policies]]`` set, parsed and validated."""

    settings: PolicySetSettings
    text: str
    annotations: dict[str, dict[str, str]] = field(default_factory=dict)
    """Each policy's annotations by Cedar's id (``policy0``, ...)."""
    _parsed: Any = None

    @classmethod
    def load(cls, settings: PolicySetSettings) -> PolicySet:
        """Read, parse and validate the files; ``PolicyError`` names file, line and column."""
        cedar = _cedar()
        found: list[Statement] = []
        for path in settings.files:
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise PolicyError(f"policies {settings.name}: {path}: {exc}") from None
            found += statements(path, text)
        for statement in found:
            try:
                cedar.PolicySet.from_str(statement.text)
            except ValueError as exc:
                raise PolicyError(
                    f"policies {settings.name}: {parse_problem(statement, str(exc))}"
                ) from None
        text = "\n".join(s.text for s in found)
        parsed = cedar.PolicySet.from_str(text)
        document = json.loads(cedar.policies_to_json_str(text))
        annotations = {
            key: dict(policy.get("annotations") or {})
            for key, policy in document.get("staticPolicies", {}).items()
        }
        if settings.schema_file is not None:
            _validate(cedar, settings, text, found)
        return cls(settings=settings, text=text, annotations=annotations, _parsed=parsed)

    def policy_id(self, key: str) -> str:
        """A policy's ``@id`` annotation, or Cedar's own id for it."""
        return self.annotations.get(key, {}).get("id", key)

    def evaluate(self, subject: Subject) -> PolicyVerdict:
        """This set's verdict on one call."""
        cedar = _cedar()
        principal = subject.principal.id if subject.principal is not None else ANONYMOUS
        attributes = dict(subject.principal.attributes) if subject.principal is not None else {}
        resource = {"side_effect": subject.side_effect, **targets(subject.arguments)}
        entities = [
            {"uid": {"type": "Principal", "id": principal}, "attrs": attributes, "parents": []},
            {"uid": {"type": "Tool", "id": subject.tool}, "attrs": resource, "parents": []},
        ]
        context = _context(subject)
        requests = [
            {
                "principal": _uid("Principal", principal),
                "action": _uid("Action", action),
                "resource": _uid("Tool", subject.tool),
                "context": context,
            }
            for action in dict.fromkeys([subject.tool, *subject.capabilities])
        ]
        try:
            results = cedar.is_authorized_batch(requests, self._parsed, entities)
        except Exception as exc:  # cedarpy raises plain exceptions for a malformed request
            return self._verdict("deny", errors=[str(exc)])
        errors = [str(e) for r in results for e in r.diagnostics.errors]
        if errors:
            return self._verdict("deny", errors=errors)
        denied = [r for r in results if not r.allowed]
        if denied:
            return self._verdict("deny", [k for r in denied for k in r.diagnostics.reasons])
        keys = list(dict.fromkeys(k for r in results for k in r.diagnostics.reasons))
        groups = [
            self.annotations[k][APPROVERS] for k in keys if APPROVERS in self.annotations.get(k, {})
        ]
        required = any(self.annotations.get(k, {}).get(APPROVAL) == "required" for k in keys)
        effect = "require_approval" if required or groups else "allow"
        return self._verdict(effect, keys, approvers=groups)

    def _verdict(
        self,
        effect: str,
        keys: Sequence[str] = (),
        *,
        approvers: Sequence[str] = (),
        errors: Sequence[str] = (),
    ) -> PolicyVerdict:
        ids = list(dict.fromkeys(self.policy_id(k) for k in keys))
        return PolicyVerdict(
            name=self.settings.name,
            mode=self.settings.mode,
            effect=effect,
            policies=ids[:MAX_VERDICT_IDS],
            approvers=list(dict.fromkeys(approvers))[:MAX_VERDICT_IDS],
            errors=[e[:MAX_ERROR_CHARS] for e in errors[:MAX_VERDICT_ERRORS]],
        )


def _validate(cedar: Any, settings: PolicySetSettings, text: str, found: list[Statement]) -> None:
    path = settings.schema_file
    assert path is not None
    try:
        source = path.read_text(encoding="utf-8")
        schema = (
            cedar.Schema.from_json_str(source)
            if path.suffix == ".json"
            else cedar.Schema.from_str(source)
        )
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise PolicyError(f"policies {settings.name}: schema {path}: {exc}") from None
    result = cedar.validate_policies(text, schema)
    if result.validation_passed:
        return
    first = result.errors[0]
    key = first.policy_id
    index = int(key[len("policy") :]) if key.startswith("policy") and key[6:].isdigit() else -1
    where = found[index].where() if 0 <= index < len(found) else str(settings.files[0])
    raise PolicyError(f"policies {settings.name}: {where}: {first.error}")


def _uid(kind: str, id: str) -> dict[str, str]:
    return {"type": kind, "id": id}


def _context(subject: Subject) -> dict[str, Any]:
    context: dict[str, Any] = {
        "side_effect": subject.side_effect,
        "capabilities": list(subject.capabilities),
    }
    if subject.profile is not None:
        context["profile"] = subject.profile
    if subject.parent is not None:
        context["parent"] = subject.parent
    if subject.policy is not None:
        context["policy_default"] = subject.policy.default_effect.value
        context["policy_rules"] = {k: v.value for k, v in subject.policy.rules.items()}
    return context


def load_all(sets: Sequence[PolicySetSettings]) -> list[PolicySet]:
    """Every configured set, loaded; the first problem raises ``PolicyError``."""
    names = [s.name for s in sets]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise PolicyError(f"policies: two sets are named {duplicate!r}")
    return [PolicySet.load(s) for s in sets]


def evaluate_all(sets: Sequence[PolicySet], subject: Subject) -> list[PolicyVerdict]:
    """Each set's verdict on one call."""
    return [s.evaluate(subject) for s in sets]
