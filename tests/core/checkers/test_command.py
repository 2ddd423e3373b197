"""The command checker kind."""

import os
import tempfile
import time

import pytest

from reviewapp.core.checkers import (
    REASON_LIMIT,
    CheckerConfigError,
    CheckInput,
    CheckVerdict,
    CommandChecker,
    GrantOverreach,
    GrantRefused,
    Sandbox,
)

from .processes import gone_soon, unique_seconds

# ── command ──────────────────────────────────────────────────────────────────

SH = "/bin/sh"
# The system interpreter: the sandbox user cannot reach a virtualenv under /root.
PYTHON = "/usr/bin/python3"


def command(script, timeout=10.0, grants=frozenset({"proc:exec"})):
    return CommandChecker("command", 1, [SH, "-c", script], timeout, grants)


def test_command_exit_0_passes(key):
    assert command("exit 0").check(CheckInput("anything"), key).permits_commit


def test_command_exit_1_fails_with_stderr(key):
    evidence = command("echo ignored; echo 'line 3: undefined name' >&2; exit 1").check(
        CheckInput("x"), key
    )
    assert evidence.verdict is CheckVerdict.FAIL
    assert evidence.reason == "line 3: undefined name"


def test_command_exit_1_without_stderr_falls_back(key):
    assert command("echo on stdout; exit 1").check(CheckInput("x"), key).reason == "on stdout"
    assert "without output" in command("exit 1").check(CheckInput("x"), key).reason


def test_the_proposal_arrives_on_stdin(key):
    checker = command("grep -q 'off-by-one'")
    assert checker.check(CheckInput("fix the off-by-one"), key).permits_commit
    assert checker.check(CheckInput("fix nothing"), key).verdict is CheckVerdict.FAIL


def test_a_python_script_checker(readable_dir, key):
    script = readable_dir / "check_json.py"
    script.write_text(
        "import json, sys\n"
        "try:\n"
        "    json.loads(sys.stdin.read())\n"
        "except ValueError as e:\n"
        "    print(f'not JSON: {e}', file=sys.stderr)\n"
        "    sys.exit(1)\n"
    )
    checker = CommandChecker(
        "py",
        1,
        [PYTHON, str(script)],
        10,
        frozenset({"proc:exec"}),
        sandbox=Sandbox(readable=(str(readable_dir),)),
    )
    assert checker.check(CheckInput('{"ok": true}'), key).permits_commit
    failed = checker.check(CheckInput("{nope"), key)
    assert failed.verdict is CheckVerdict.FAIL
    assert failed.reason.startswith("not JSON:")


def test_a_large_proposal_is_streamed_whether_or_not_it_is_read(key):
    big = CheckInput("y" * 1_000_000)
    assert command("wc -c >&2; exit 1").check(big, key).reason == "1000000"
    assert command("exit 0").check(big, key).permits_commit


@pytest.mark.parametrize(
    "script, why",
    [
        ("exit 2", "exited 2"),
        ("echo boom >&2; exit 3", "exited 3: boom"),
        ("kill -SEGV $$", "killed by SIGSEGV"),
    ],
)
def test_any_other_outcome_is_inconclusive(key, script, why):
    evidence = command(script).check(CheckInput("x"), key)
    assert evidence.verdict is CheckVerdict.INCONCLUSIVE
    assert why in evidence.reason


def test_a_missing_executable_is_inconclusive(key, tmp_path):
    missing = str(tmp_path / "no-such-tool")
    checker = CommandChecker("missing", 1, [missing], 5, frozenset({"proc:exec"}))
    evidence = checker.check(CheckInput("x"), key)
    assert evidence.verdict is CheckVerdict.INCONCLUSIVE
    assert "could not run" in evidence.reason


def test_a_timeout_is_inconclusive_and_quick(key):
    started = time.monotonic()
    evidence = command("sleep 30", timeout=0.3).check(CheckInput("x"), key)
    assert evidence.verdict is CheckVerdict.INCONCLUSIVE
    assert "timed out" in evidence.reason
    assert time.monotonic() - started < 5


def test_a_timeout_kills_every_process_it_started_however_detached(key):
    marker = unique_seconds()
    script = f"sleep {marker} & setsid sleep {marker} & setsid sh -c 'sleep {marker} &'; sleep 30"
    evidence = command(script, timeout=0.5).check(CheckInput("x"), key)
    assert evidence.verdict is CheckVerdict.INCONCLUSIVE
    assert "timed out" in evidence.reason
    assert gone_soon(marker)


def test_nothing_a_finished_command_detached_survives_it(key):
    marker = unique_seconds()
    script = f"setsid sleep {marker} & setsid sh -c 'sleep {marker} &'; sleep 0.2; exit 0"
    assert command(script).check(CheckInput("x"), key).permits_commit
    assert gone_soon(marker)


def test_a_background_straggler_does_not_hold_the_verdict(key):
    started = time.monotonic()
    assert command("sleep 30 & exit 0").check(CheckInput("x"), key).permits_commit
    assert time.monotonic() - started < 5


def test_the_environment_is_clean(key, monkeypatch):
    monkeypatch.setenv("REVIEWAPP_TEST_SECRET", "hunter2")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent")
    evidence = command("env >&2; exit 1").check(CheckInput("x"), key)
    assert "PATH=/usr/bin:/bin" in evidence.reason.splitlines()
    assert "LANG=C.UTF-8" in evidence.reason.splitlines()
    for leaked in ("hunter2", "REVIEWAPP_TEST_SECRET", "sk-parent", "OPENAI_API_KEY", "HOME="):
        assert leaked not in evidence.reason


def test_a_fresh_working_directory_is_removed_afterwards(key):
    evidence = command("pwd >&2; touch made-here; exit 1").check(CheckInput("x"), key)
    workdir = evidence.reason
    assert workdir != os.getcwd()
    assert workdir.startswith(os.path.realpath(tempfile.gettempdir()))
    assert not os.path.exists(workdir)


def test_command_output_is_capped(key):
    evidence = command("head -c 300000 /dev/zero | tr '\\0' x >&2; exit 1").check(
        CheckInput("x"), key
    )
    assert evidence.verdict is CheckVerdict.FAIL
    assert evidence.reason.endswith("… [truncated]")
    assert len(evidence.reason) <= REASON_LIMIT + len("… [truncated]")


def test_command_evidence_is_deterministic(key):
    checker = command("cat >&2; exit 1")
    first = checker.check(CheckInput("same proposal"), key)
    second = checker.check(CheckInput("same proposal"), key)
    assert first.reason == "same proposal"
    assert first.payload_bytes == second.payload_bytes
    assert first == second


def test_a_command_checker_needs_proc_exec_covering_its_executable():
    with pytest.raises(CheckerConfigError, match="proc:exec"):
        command("exit 0", grants=frozenset({"fs:read"}))
    with pytest.raises(CheckerConfigError, match="proc:exec"):
        command("exit 0", grants=frozenset({"proc:exec:/usr/local/bin/*"}))
    assert command("exit 0", grants=frozenset({"proc:exec:/bin/*"}))
    assert command("exit 0", grants=frozenset({"proc:exec:/**"}))
    assert command("exit 0", grants=frozenset({"proc:exec:/bin/sh"}))


@pytest.fixture
def tree(readable_dir):
    """readable_dir/tree/tool (granted tree) and readable_dir/outside/tool (not granted)."""
    for part in ("tree", "outside"):
        (readable_dir / part).mkdir()
        tool = readable_dir / part / "tool"
        tool.write_text("#!/bin/sh\nexit 0\n")
        tool.chmod(0o755)
    (readable_dir / "tree" / "sub").mkdir()
    return readable_dir


def in_tree(tree, executable):
    return CommandChecker("t", 1, [executable], 5, frozenset({f"proc:exec:{tree}/tree/**"}))


def test_an_exec_grant_covers_its_tree_by_resolved_path(tree, key):
    assert in_tree(tree, f"{tree}/tree/tool").check(CheckInput("x"), key).permits_commit
    assert in_tree(tree, f"{tree}/tree/sub/../tool").check(CheckInput("x"), key).permits_commit


def test_dot_dot_out_of_a_granted_tree_is_not_covered(tree):
    with pytest.raises(CheckerConfigError, match="proc:exec"):
        in_tree(tree, f"{tree}/tree/../outside/tool")


def test_a_symlink_out_of_a_granted_tree_is_not_covered(tree):
    (tree / "tree" / "link").symlink_to(tree / "outside" / "tool")
    with pytest.raises(CheckerConfigError, match="proc:exec"):
        in_tree(tree, f"{tree}/tree/link")


def test_a_symlink_repointed_out_of_the_tree_after_configuration_does_not_run(tree, key):
    link = tree / "tree" / "link"
    link.symlink_to(tree / "tree" / "tool")
    checker = in_tree(tree, str(link))
    link.unlink()
    link.symlink_to(tree / "outside" / "tool")
    evidence = checker.check(CheckInput("x"), key)
    assert evidence.verdict is CheckVerdict.INCONCLUSIVE
    assert "not granted" in evidence.reason


def test_a_grant_with_dot_dot_covers_nothing(tree):
    with pytest.raises(CheckerConfigError, match="proc:exec"):
        CommandChecker(
            "t", 1, [f"{tree}/outside/tool"], 5, frozenset({f"proc:exec:{tree}/tree/../**"})
        )


def test_command_grants_above_the_ceiling_are_refused_at_configuration():
    with pytest.raises(GrantOverreach):
        command("exit 0", grants=frozenset({"proc:exec", "net:egress:**"}))


def test_command_grants_widened_later_are_refused_before_running(key, tmp_path):
    marker = tmp_path / "ran"
    checker = command(f"touch {marker}")
    checker.grants = checker.grants | {"secret:use:anthropic_key"}
    with pytest.raises(GrantRefused):
        checker.check(CheckInput("x"), key)
    assert not marker.exists()


def test_command_exec_grant_withdrawn_later_is_inconclusive(key, tmp_path):
    marker = tmp_path / "ran"
    checker = command(f"touch {marker}")
    checker.grants = frozenset()
    evidence = checker.check(CheckInput("x"), key)
    assert evidence.verdict is CheckVerdict.INCONCLUSIVE
    assert not marker.exists()


@pytest.mark.parametrize(
    "argv, timeout", [([], 1), ([""], 1), ("sh -c true", 1), ([SH, "-c", "a\0b"], 1), ([SH], 0)]
)
def test_a_bad_command_configuration_is_refused(argv, timeout):
    with pytest.raises(CheckerConfigError):
        CommandChecker("c", 1, argv, timeout, frozenset({"proc:exec"}))


def test_what_a_command_prints_is_made_storable(key):
    evidence = command("printf 'bad\\000byte' >&2; exit 1").check(CheckInput("x"), key)
    assert evidence.reason == "bad\ufffdbyte"
    assert b"\\u0000" not in evidence.payload_bytes
