import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import pytest

from reviewapp.core.checkers import (
    CHECKER_CEILING,
    EVIDENCE_SCHEMA,
    REASON_LIMIT,
    Checker,
    CheckerConfigError,
    CheckError,
    CheckInput,
    CheckVerdict,
    CommandChecker,
    ConstraintsChecker,
    Evidence,
    GrantOverreach,
    GrantRefused,
    GrantUndecidable,
    InputNotAddressable,
    JsonSchemaChecker,
    Judgement,
    RegexChecker,
    SigningFailed,
    ensure_model_free,
)
from reviewapp.core.signing import Signer, canonical_json, sha256_hex


class Constant(Checker):
    """A checker that always returns the same verdict (the reference's Constant).

    Lives in the tests: a checker that always passes is exactly what the
    contract exists to prevent, so the product does not ship one.
    """

    def __init__(self, verdict, reason="", name=None, version=1):
        super().__init__(f"constant-{verdict}" if name is None else name, version)
        self._judgement = Judgement(verdict, reason)

    @classmethod
    def passing(cls):
        return cls(CheckVerdict.PASS)

    @classmethod
    def failing(cls, reason):
        return cls(CheckVerdict.FAIL, reason)

    @classmethod
    def undecided(cls, reason):
        return cls(CheckVerdict.INCONCLUSIVE, reason)

    def named(self, name, version):
        return Constant(self._judgement.verdict, self._judgement.reason, name, version)

    def judge(self, inputs):
        return self._judgement


class Declaring(Checker):
    """A checker declaring whatever a test needs it to, and noting whether it ran."""

    def __init__(self, grants=()):
        super().__init__("declaring", 1, grants=grants)
        self.judged = False

    def judge(self, inputs):
        self.judged = True
        return Judgement.passed()


def declaring_after_configuration(grants):
    # Configuration already refuses these; widening afterwards (a settings row
    # edited under a live checker) is what check() must still catch.
    checker = Declaring()
    checker.grants = frozenset(grants)
    return checker


@pytest.fixture
def inputs():
    return CheckInput(
        content="fix the off-by-one",
        thought_process="the loop bound is inclusive",
        metadata={"ticket": 42},
    )


@pytest.fixture(scope="module")
def key():
    return Signer.from_seed(bytes([7]) * 32)


# ── the contract ─────────────────────────────────────────────────────────────


def test_check_takes_the_inputs_and_returns_evidence(inputs, key):
    evidence = Constant.passing().check(inputs, key)
    assert isinstance(evidence, Evidence)
    assert evidence.verdict is CheckVerdict.PASS
    assert evidence.permits_commit


def test_the_checker_id_and_version_reach_the_evidence(inputs, key):
    evidence = Constant.passing().named("json-schema", 3).check(inputs, key)
    assert (evidence.checker, evidence.version) == ("json-schema", 3)
    assert json.loads(evidence.payload_bytes)["version"] == 3


def test_a_checker_returns_pass_fail_or_inconclusive_and_only_pass_commits(inputs, key):
    cases = [
        (Constant.passing(), True),
        (Constant.failing("schema violation at /items/2"), False),
        (Constant.undecided("the compiler timed out"), False),
    ]
    for checker, commits in cases:
        assert checker.check(inputs, key).permits_commit is commits, checker
    assert [v.permits_commit for v in CheckVerdict] == [True, False, False]
    assert [str(v) for v in CheckVerdict] == ["pass", "fail", "inconclusive"]


def test_inconclusive_never_commits(inputs, key):
    evidence = Constant.undecided("the test run timed out").check(inputs, key)
    assert not evidence.permits_commit
    assert evidence.reason == "the test run timed out"


def test_evidence_names_what_was_judged(inputs, key):
    evidence = Constant.passing().check(inputs, key)
    assert evidence.covers(sha256_hex(b"fix the off-by-one"))
    assert evidence.covers(sha256_hex(b"the loop bound is inclusive"))
    assert evidence.covers(sha256_hex(canonical_json({"ticket": 42})))
    assert not evidence.covers(sha256_hex(b"some other artefact"))
    assert set(evidence.digests) == {"content", "thought_process", "metadata", "settings"}


def test_a_checker_can_name_further_inputs_it_looked_at(inputs, key):
    class Schema(Checker):
        def judge(self, inputs):
            return Judgement.passed().covering("schema", sha256_hex(b"the schema"))

    evidence = Schema("json-schema", 1).check(inputs, key)
    assert evidence.covers(sha256_hex(b"the schema"))
    assert evidence.covers(sha256_hex(inputs.content.encode()))


def test_a_checker_cannot_rebind_what_check_binds(inputs, key):
    class Forger(Checker):
        def judge(self, inputs):
            return Judgement.passed().covering("content", sha256_hex(b"another proposal"))

    evidence = Forger("forger", 1).check(inputs, key)
    assert evidence.verdict is CheckVerdict.INCONCLUSIVE
    assert evidence.digests["content"] == sha256_hex(inputs.content.encode())
    assert not evidence.covers(sha256_hex(b"another proposal"))


def test_the_evidence_is_signed_and_verifies(inputs, key):
    evidence = Constant.passing().check(inputs, key)
    assert evidence.verify(key.public_key)
    assert evidence.key_id == key.key_id
    payload = json.loads(evidence.payload_bytes)
    assert payload["schema"] == EVIDENCE_SCHEMA
    assert payload["key_id"] == key.key_id
    assert canonical_json(payload) == evidence.payload_bytes


def test_evidence_verifies_with_nothing_but_the_public_key(inputs, key):
    from reviewapp.core.signing import verify

    evidence = Constant.failing("no").check(inputs, key)
    assert verify(evidence.payload_bytes, evidence.signature, key.public_key)
    assert not evidence.verify(Signer.generate().public_key)
    assert not evidence.verify(b"not a key")


def test_evidence_edited_after_signing_does_not_verify(inputs, key):
    evidence = Constant.failing("schema violation").check(inputs, key)
    for change in (
        {"verdict": CheckVerdict.PASS},
        {"reason": ""},
        {"digests": {**evidence.digests, "content": sha256_hex(b"x")}},
        {"version": 2},
        {"payload_bytes": evidence.payload_bytes.replace(b'"fail"', b'"pass"')},
        {"signature": bytes(64)},
    ):
        assert not dataclasses.replace(evidence, **change).verify(key.public_key), change


def test_the_same_inputs_always_yield_the_same_evidence(inputs, key):
    checker = Constant.passing()
    first = checker.check(inputs, key)
    for _ in range(8):
        again = checker.check(CheckInput(**dataclasses.asdict(inputs)), key)
        assert again == first
        assert again.payload_bytes == first.payload_bytes
        assert again.signature == first.signature


def test_different_inputs_yield_different_evidence(inputs, key):
    checker = Constant.passing()
    one = checker.check(inputs, key)
    for other in (
        dataclasses.replace(inputs, content="fix the off-by-two"),
        dataclasses.replace(inputs, thought_process="a different trace"),
        dataclasses.replace(inputs, metadata={"ticket": 43}),
    ):
        assert checker.check(other, key).payload_bytes != one.payload_bytes


def test_inputs_that_cannot_be_addressed_yield_no_evidence(key):
    for bad in (
        CheckInput("ok", metadata={"x": float("nan")}),
        CheckInput("lone surrogate \ud800"),
        "not a CheckInput",
    ):
        with pytest.raises(InputNotAddressable):
            Constant.passing().check(bad, key)


# ── the capability set ───────────────────────────────────────────────────────


@pytest.mark.parametrize(
    "reaching", ["net:egress:api.anthropic.com:443", "net:egress:**", "secret:use:anthropic_key"]
)
def test_a_checker_that_could_reach_a_model_provider_is_refused(inputs, key, reaching):
    with pytest.raises(GrantOverreach):
        Declaring([reaching])  # at configuration time
    checker = declaring_after_configuration([reaching])
    with pytest.raises(GrantOverreach) as refused:
        checker.check(inputs, key)  # and again before running
    assert refused.value.grants == (reaching,)
    assert isinstance(refused.value, GrantRefused) and isinstance(refused.value, CheckError)


def test_an_over_authorised_checker_never_runs(inputs, key):
    checker = declaring_after_configuration(["net:egress:**"])
    with pytest.raises(GrantRefused):
        checker.check(inputs, key)
    assert not checker.judged


@pytest.mark.parametrize("nondeterministic", ["time:now", "rand:bytes", "env:read:HOME"])
def test_a_checker_cannot_hold_a_clock_or_a_source_of_randomness(inputs, key, nondeterministic):
    with pytest.raises(GrantOverreach):
        declaring_after_configuration([nondeterministic]).check(inputs, key)


def test_a_checker_cannot_write_to_what_it_is_judging(inputs, key):
    with pytest.raises(GrantOverreach) as refused:
        declaring_after_configuration(["fs:write:/src/**", "fs:read:/src/**"]).check(inputs, key)
    assert refused.value.grants == ("fs:write:/src/**",), "only the offender is named"
    assert "fs:write" in str(refused.value)


def test_every_offending_grant_is_named_in_a_stable_order():
    with pytest.raises(GrantOverreach) as refused:
        ensure_model_free("c", ["secret:use:k", "fs:read", "net:egress:**", "not a grant"])
    assert refused.value.grants == ("net:egress:**", "not a grant", "secret:use:k")
    assert refused.value.checker == "c"


def test_the_grants_a_real_checker_needs_are_allowed(inputs, key):
    checker = Declaring(["fs:read:/workspace/**", "proc:exec:/usr/bin/cargo", "fs:stat"])
    assert checker.check(inputs, key).permits_commit
    assert checker.judged


def test_declaring_nothing_is_the_default_and_is_allowed(inputs, key):
    assert Constant.passing().grants == frozenset()
    assert Constant.passing().check(inputs, key).permits_commit


def test_an_undecidable_grant_is_refused_rather_than_assumed():
    # A template segment is symbolic, so containment cannot be decided.
    with pytest.raises(GrantUndecidable):
        ensure_model_free("templated", ["fs:read:{workspace}"])
    # A definite overreach outranks an unknown.
    with pytest.raises(GrantOverreach):
        ensure_model_free("templated", ["fs:read:{workspace}", "net:egress:**"])


def test_the_ceiling_omits_every_domain_that_could_reach_a_model():
    assert CHECKER_CEILING == {"fs:read", "fs:list", "fs:stat", "proc:exec"}
    domains = {grant.split(":")[0] for grant in CHECKER_CEILING}
    actions = {grant.split(":")[1] for grant in CHECKER_CEILING}
    assert not domains & {"net", "secret", "time", "rand", "env"}
    assert "write" not in actions


def test_an_implementation_cannot_replace_check():
    with pytest.raises(TypeError, match="judge"):

        class Sneaky(Checker):
            def judge(self, inputs):
                return Judgement.passed()

            def check(self, inputs, signer):  # pragma: no cover - refused at class creation
                raise AssertionError


# ── signing failure ──────────────────────────────────────────────────────────


class BrokenSigner(Signer):
    def sign_bytes(self, data):
        raise RuntimeError("the KMS did not answer")


class ForgingSigner(Signer):
    def sign_bytes(self, data):
        return bytes(64)


@pytest.mark.parametrize("signer_class", [BrokenSigner, ForgingSigner])
def test_a_signing_failure_yields_no_evidence(inputs, signer_class):
    signer = signer_class.from_seed(bytes(32))
    with pytest.raises(SigningFailed) as failed:
        Constant.passing().check(inputs, signer)
    assert failed.value.checker == "constant-pass"


# ── judgements ───────────────────────────────────────────────────────────────


def test_a_judgement_says_which_of_the_three_it_is():
    assert Judgement.passed().is_pass
    assert not Judgement.failed("no").is_pass
    assert not Judgement.inconclusive("could not tell").is_pass


def test_a_failure_reason_survives_to_the_repair_loop(inputs, key):
    reason = "expected string at /items/2, found number"
    assert Judgement.failed(reason).reason == reason
    assert Constant.failing(reason).check(inputs, key).reason == reason


def test_a_judge_that_raises_is_inconclusive_not_an_error(inputs, key):
    class Crashes(Checker):
        def judge(self, inputs):
            raise ZeroDivisionError("division by zero")

    class ReturnsJunk(Checker):
        def judge(self, inputs):
            return "pass"

    crashed = Crashes("crashes", 1).check(inputs, key)
    assert crashed.verdict is CheckVerdict.INCONCLUSIVE
    assert "ZeroDivisionError" in crashed.reason
    assert ReturnsJunk("junk", 1).check(inputs, key).verdict is CheckVerdict.INCONCLUSIVE


def test_reasons_are_bounded(inputs, key):
    evidence = Constant.failing("x" * 100_000).check(inputs, key)
    assert len(evidence.reason) <= REASON_LIMIT + len("… [truncated]")
    assert evidence.verify(key.public_key)


@pytest.mark.parametrize(
    "name, version", [("", 1), ("  ", 1), ("ok", -1), ("ok", True), ("ok", "1"), ("ok", 2**32)]
)
def test_a_checker_needs_a_name_and_a_version(name, version):
    with pytest.raises(CheckerConfigError):
        Constant(CheckVerdict.PASS, name=name, version=version)


def test_grants_are_a_collection_not_one_string():
    with pytest.raises(CheckerConfigError):
        Declaring("proc:exec")


# ── constraints ──────────────────────────────────────────────────────────────

MANDATE = 'must contain "alpha"; must not contain "forbidden"; output must feel authoritative'


def test_constraints_pass_keeps_unenforced_clauses_visible(key):
    checker = ConstraintsChecker("mandate", 1, MANDATE)
    evidence = checker.check(CheckInput("alpha, nothing else"), key)
    assert evidence.verdict is CheckVerdict.PASS
    assert evidence.details["unenforced"] == ["output must feel authoritative"]
    assert json.loads(evidence.payload_bytes)["details"]["unenforced"] == [
        "output must feel authoritative"
    ]
    assert evidence.details["csr"] == 1.0 and evidence.details["error"] == 0.0


def test_constraints_fail_carries_the_feedback_lines(key):
    checker = ConstraintsChecker("mandate", 1, MANDATE)
    evidence = checker.check(CheckInput("forbidden words only"), key)
    assert evidence.verdict is CheckVerdict.FAIL
    lines = evidence.reason.splitlines()
    assert len(lines) == 2
    assert "'alpha'" in lines[0] and "'forbidden'" in lines[1]
    assert evidence.details["csr"] == 0.0
    assert evidence.details["unenforced"] == ["output must feel authoritative"]


def test_a_mandate_with_nothing_checkable_is_refused_at_configuration():
    with pytest.raises(CheckerConfigError, match="mandate refused"):
        ConstraintsChecker("mandate", 1, "output must feel authoritative")
    with pytest.raises(CheckerConfigError):
        ConstraintsChecker("mandate", 1, "must match /([unclosed/")


def test_the_mandate_is_bound_into_the_evidence(key):
    one = ConstraintsChecker("mandate", 1, 'must contain "alpha"').check(CheckInput("alpha"), key)
    two = ConstraintsChecker("mandate", 1, 'must include "alpha"').check(CheckInput("alpha"), key)
    assert one.digests["settings"] != two.digests["settings"]


# ── json schema ──────────────────────────────────────────────────────────────

SCHEMA = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": {"type": "string"}}},
    "required": ["items"],
}


@pytest.fixture
def schema_checker():
    return JsonSchemaChecker("json-schema", 1, SCHEMA)


def test_json_schema_pass(schema_checker, key):
    assert schema_checker.check(CheckInput('{"items": ["a", "b"]}'), key).permits_commit


def test_json_schema_fail_says_where(schema_checker, key):
    evidence = schema_checker.check(CheckInput('{"items": ["a", "b", 3, 4]}'), key)
    assert evidence.verdict is CheckVerdict.FAIL
    assert evidence.reason.splitlines() == [
        "at /items/2: 3 is not of type 'string'",
        "at /items/3: 4 is not of type 'string'",
    ]
    missing = schema_checker.check(CheckInput("{}"), key)
    assert missing.reason == "at /: 'items' is a required property"


@pytest.mark.parametrize(
    "content, why",
    [
        ("Here is your JSON: {}", "not valid JSON"),
        ('{"items": [NaN]}', "NaN"),
        ('{"items": [], "items": ["x"]}', "duplicate key 'items'"),
    ],
)
def test_content_that_is_not_json_fails(schema_checker, key, content, why):
    evidence = schema_checker.check(CheckInput(content), key)
    assert evidence.verdict is CheckVerdict.FAIL
    assert why in evidence.reason


def test_an_invalid_schema_is_refused_at_construction():
    with pytest.raises(CheckerConfigError, match="invalid schema"):
        JsonSchemaChecker("json-schema", 1, {"type": "no-such-type"})
    with pytest.raises(CheckerConfigError):
        JsonSchemaChecker("json-schema", 1, {"const": float("nan")})
    with pytest.raises(CheckerConfigError, match="unknown"):
        JsonSchemaChecker("json-schema", 1, {"$schema": "https://example.invalid/dialect"})


def test_schema_errors_come_in_document_order(schema_checker, key):
    items = ", ".join(["3" if i in (2, 10) else '"s"' for i in range(11)])
    evidence = schema_checker.check(CheckInput(f'{{"items": [{items}]}}'), key)
    assert [line.split(":")[0] for line in evidence.reason.splitlines()] == [
        "at /items/2",
        "at /items/10",
    ]


def test_an_unresolvable_ref_is_inconclusive_and_never_fetched(key):
    checker = JsonSchemaChecker("json-schema", 1, {"$ref": "https://example.invalid/s.json"})
    evidence = checker.check(CheckInput("{}"), key)
    assert evidence.verdict is CheckVerdict.INCONCLUSIVE


def test_the_schema_is_bound_into_the_evidence(key):
    other = JsonSchemaChecker("json-schema", 1, {"type": "object"})
    content = CheckInput("{}")
    assert (
        other.check(content, key).digests["settings"]
        != JsonSchemaChecker("json-schema", 1, SCHEMA).check(content, key).digests["settings"]
    )


# ── regex ────────────────────────────────────────────────────────────────────


def test_regex_must_match(key):
    checker = RegexChecker("ticket-ref", 1, r"\bJIRA-\d+\b")
    assert checker.check(CheckInput("fixes JIRA-12"), key).permits_commit
    evidence = checker.check(CheckInput("fixes nothing"), key)
    assert evidence.verdict is CheckVerdict.FAIL
    assert "does not match" in evidence.reason


def test_regex_must_not_match(key):
    checker = RegexChecker("no-secrets", 1, r"sk-[A-Za-z0-9]{8,}", must_match=False)
    assert checker.check(CheckInput("no key here"), key).permits_commit
    evidence = checker.check(CheckInput("token sk-abcdefgh123"), key)
    assert evidence.verdict is CheckVerdict.FAIL
    assert "at character 6" in evidence.reason and "sk-abcdefgh123" in evidence.reason


def test_a_regex_timeout_is_inconclusive(key):
    checker = RegexChecker("catastrophic", 1, r"(\w+\s?)*$", timeout_seconds=0.1)
    started = time.monotonic()
    evidence = checker.check(CheckInput("x " * 30_000 + "!"), key)
    assert evidence.verdict is CheckVerdict.INCONCLUSIVE
    assert "did not finish" in evidence.reason
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(
    "kwargs",
    [
        {"pattern": "([unclosed"},
        {"pattern": "ok", "must_match": "no"},
        {"pattern": "ok", "timeout_seconds": 0},
        {"pattern": "ok", "timeout_seconds": True},
    ],
)
def test_a_bad_regex_configuration_is_refused(kwargs):
    with pytest.raises(CheckerConfigError):
        RegexChecker("r", 1, **kwargs)


# ── command ──────────────────────────────────────────────────────────────────

SH = "/bin/sh"


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


def test_a_python_script_checker(tmp_path, key):
    script = tmp_path / "check_json.py"
    script.write_text(
        "import json, sys\n"
        "try:\n"
        "    json.loads(sys.stdin.read())\n"
        "except ValueError as e:\n"
        "    print(f'not JSON: {e}', file=sys.stderr)\n"
        "    sys.exit(1)\n"
    )
    checker = CommandChecker("py", 1, [sys.executable, str(script)], 10, frozenset({"proc:exec"}))
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


def _gone_or_zombie(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_a_timeout_kills_the_whole_process_group(key, tmp_path):
    pidfile = tmp_path / "pid"
    evidence = command(f"sleep 30 & echo $! > {pidfile}; sleep 30", timeout=0.5).check(
        CheckInput("x"), key
    )
    assert evidence.verdict is CheckVerdict.INCONCLUSIVE
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while not _gone_or_zombie(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone_or_zombie(pid)


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
        command("exit 0", grants=frozenset({"proc:exec:/usr/bin/*"}))
    assert command("exit 0", grants=frozenset({"proc:exec:/bin/*"}))
    assert command("exit 0", grants=frozenset({"proc:exec:/**"}))
    assert command("exit 0", grants=frozenset({"proc:exec:/bin/sh"}))


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
