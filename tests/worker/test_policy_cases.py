"""``toolcalls policy test``: example requests against the configured Cedar policies, with no
server, as a deployment's CI runs it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.worker.support import TOOLCALLS

POLICY = """@id("everyone")
permit(principal, action, resource);

@id("no-bob-writes")
forbid(principal == Principal::"bob", action == Action::"filesystem.write", resource);

@id("reports-need-approval")
@approval("required")
permit(principal, action == Action::"read_file", resource)
when { resource has path && resource.path like "*/reports/*" };
"""

CASES = """[[cases]]
name = "bob may not write"
principal = {{ id = "bob" }}
tool = "create_file"
arguments = {{ path = "{root}/a.txt", content = "x" }}
expect = "deny"

[[cases]]
name = "reports need an approval"
principal = {{ id = "alice", attributes = {{ tenant = "acme" }} }}
tool = "read_file"
arguments = {{ path = "{root}/reports/q3.txt" }}
expect = "{reports}"

[[cases]]
name = "arithmetic for all"
tool = "calculator"
arguments = {{ expression = "1 + 1" }}
expect = "allow"
"""


def _setup(tmp_path: Path, reports: str) -> tuple[Path, Path]:
    root = tmp_path / "root"
    (root / "reports").mkdir(parents=True)
    (tmp_path / "main.cedar").write_text(POLICY)
    config = tmp_path / "toolcalls.toml"
    config.write_text(
        'tools = ["calculator", "create_file", "read_file"]\n'
        f'[files]\nroots = ["{root}"]\ncheckpoints = "{tmp_path / "cp.db"}"\n'
        f'[[policies]]\nname = "main"\nfiles = ["{tmp_path / "main.cedar"}"]\n'
    )
    cases = tmp_path / "cases.toml"
    cases.write_text(CASES.format(root=root, reports=reports))
    return config, cases


def _run(config: Path, cases: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TOOLCALLS, "policy", "test", str(cases), "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_every_case_passes(tmp_path: Path) -> None:
    # The file's path, under reports/, is what asks for the approval.
    done = _run(*_setup(tmp_path, "require_approval"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok   bob may not write: create_file for bob: expected deny, got deny" in done.stdout
    assert "no-bob-writes" in done.stdout
    assert "3 of 3 cases pass" in done.stdout


def test_a_mismatch_fails_with_expected_and_actual(tmp_path: Path) -> None:
    done = _run(*_setup(tmp_path, "allow"))
    assert done.returncode == 1
    assert (
        "FAIL reports need an approval: read_file for alice: expected allow, "
        "got require_approval" in done.stdout
    )
    assert "reports-need-approval" in done.stdout
    assert "2 of 3 cases pass" in done.stdout


def test_a_malformed_cases_file_is_a_usage_error(tmp_path: Path) -> None:
    config, cases = _setup(tmp_path, "allow")
    cases.write_text('[[cases]]\ntool = "calculator"\nexpect = "maybe"\n')
    done = _run(config, cases)
    assert done.returncode == 2
    assert "cases.0.expect" in done.stderr
