"""The checker contract: verdicts, grants, binding, signing."""

import dataclasses
import json

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
    Evidence,
    GrantOverreach,
    GrantRefused,
    GrantUndecidable,
    InputNotAddressable,
    Judgement,
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


def test_a_reason_is_made_storable_before_it_is_signed(inputs, key):
    evidence = Constant.failing("nul\x00 and half a pair \ud800").check(inputs, key)
    assert evidence.reason == "nul\ufffd and half a pair \ufffd"
    assert evidence.verify(key.public_key)
    assert "\\u0000" not in evidence.payload_bytes.decode("utf-8")


def test_details_are_made_storable_before_they_are_signed(inputs, key):
    class Detailing(Checker):
        def judge(self, inputs):
            return Judgement.passed(details={"found\x00": ["nul\x00"]})

    evidence = Detailing("detailing", 1).check(inputs, key)
    assert evidence.details == {"found\ufffd": ["nul\ufffd"]}
    assert evidence.verify(key.public_key)


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
