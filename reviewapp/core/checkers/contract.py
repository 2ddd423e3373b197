"""Deterministic, model-free checkers and the signed evidence they produce.

Model output is a proposal, never ground truth; a checker is what decides
whether a proposal may commit, so a checker must not itself be able to consult
a model. That is enforced by authority, not convention: a checker declares
grants, and anything beyond ``CHECKER_CEILING`` (no net, no secret, no clock,
no randomness, no env, no fs:write) is refused before it runs.

Implementations write ``judge()``. ``Checker.check()`` is a template method
they cannot override; it does what an implementation is not trusted to do for
itself, in this order:

1. refuse a checker holding authority above the ceiling, before judging;
2. bind the verdict to what was judged (digests of the inputs and settings);
3. sign, or fail without evidence.

A checker has no failure channel except its verdict. A tool that crashed,
timed out or got input it cannot handle is ``INCONCLUSIVE``, which never
commits; there is no second way to say "no answer" for a caller to log and
carry on past. ``CheckError`` covers only what is not a checker's opinion:
authority it may not hold, inputs that cannot be addressed, a signature that
could not be made. None of those yields evidence, so none of them commits.

A checker is a pure function of its inputs and settings: the signed bytes hold
no timestamp and no randomness, and ed25519 is deterministic, so the same
inputs give byte-identical evidence. The only exception is a wall-clock
timeout (regex, command), and it can only turn a verdict into INCONCLUSIVE.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, final

from ..signing import Signer, canonical_json, key_id_for, sha256_hex, verify
from ..text import storable, storable_json
from .errors import CheckerConfigError, InputNotAddressable, SigningFailed
from .grants import ensure_model_free

EVIDENCE_SCHEMA = "reviewapp.evidence/1"

# Digest names check() binds itself; a judgement may not rebind them.
INPUT_DIGESTS = ("content", "thought_process", "metadata", "settings")

# A reason is read by people and by the next attempt's model; an unbounded one
# (a tool dumping megabytes on stderr) helps neither and bloats every row.
REASON_LIMIT = 4000

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def _truncate(text: str, limit: int = REASON_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit] + "… [truncated]"


def _positive_seconds(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < math.inf


class CheckVerdict(StrEnum):
    """Three-valued, because "could not tell" must never read as "pass"."""

    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"

    @property
    def permits_commit(self) -> bool:
        return self is CheckVerdict.PASS


# ── inputs, judgements, evidence ─────────────────────────────────────────────


@dataclass(frozen=True)
class CheckInput:
    """What a checker judges: the proposal as submitted.

    Every field is digested into the evidence, whether or not a given checker
    reads it, so evidence cannot be reattached to a proposal that differs in
    any part. Text is digested as UTF-8, metadata as canonical JSON.
    """

    content: str
    thought_process: str = ""
    metadata: Mapping[str, Any] | None = None

    def digests(self) -> dict[str, str]:
        return {
            "content": sha256_hex(self.content.encode("utf-8")),
            "thought_process": sha256_hex(self.thought_process.encode("utf-8")),
            "metadata": sha256_hex(canonical_json(dict(self.metadata or {}))),
        }


@dataclass(frozen=True)
class Judgement:
    """What a checker decided, before ``check()`` binds and signs it.

    ``also`` names further digests the verdict speaks about (name → sha256
    hex). The input and settings digests are not here: ``check()`` adds them,
    so a checker cannot produce a verdict that fails to name what it judged.
    ``details`` is signed with the verdict (e.g. a mandate's unenforced
    clauses) and must be JSON.
    """

    verdict: CheckVerdict
    reason: str = ""
    also: Mapping[str, str] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.verdict, CheckVerdict):
            raise TypeError(f"verdict must be a CheckVerdict, not {self.verdict!r}")
        if not isinstance(self.reason, str):
            raise TypeError("reason must be text")
        for name, digest in self.also.items():
            if name in INPUT_DIGESTS:
                raise ValueError(f"digest name {name!r} is bound by check() itself")
            if not isinstance(digest, str) or not _SHA256_HEX.fullmatch(digest):
                raise ValueError(f"digest {name!r} is not a lower-case sha256 hex digest")
        # Fail here, inside judge(), rather than later at signing time.
        canonical_json({"details": dict(self.details)})

    @classmethod
    def passed(cls, *, details: Mapping[str, Any] | None = None) -> Judgement:
        return cls(CheckVerdict.PASS, details=dict(details or {}))

    @classmethod
    def failed(cls, reason: str, *, details: Mapping[str, Any] | None = None) -> Judgement:
        """A failure, with a reason a repair loop can act on: what and where."""
        return cls(CheckVerdict.FAIL, reason, details=dict(details or {}))

    @classmethod
    def inconclusive(cls, reason: str, *, details: Mapping[str, Any] | None = None) -> Judgement:
        """No conclusion: a timeout, a crashed tool, input this checker cannot handle."""
        return cls(CheckVerdict.INCONCLUSIVE, reason, details=dict(details or {}))

    def covering(self, name: str, digest: str) -> Judgement:
        """The same judgement, also speaking about ``digest`` under ``name``."""
        return Judgement(self.verdict, self.reason, {**self.also, name: digest}, self.details)

    @property
    def is_pass(self) -> bool:
        return self.verdict.permits_commit


def _evidence_payload(
    checker: str,
    version: int,
    verdict: CheckVerdict,
    reason: str,
    digests: Mapping[str, str],
    details: Mapping[str, Any],
    key_id: str,
) -> dict[str, Any]:
    # The schema tag separates evidence from anything else the same key signs
    # (decisions), so one can never be passed off as the other.
    return {
        "schema": EVIDENCE_SCHEMA,
        "checker": checker,
        "version": version,
        "verdict": verdict.value,
        "reason": reason,
        "digests": dict(digests),
        "details": dict(details),
        "key_id": key_id,
    }


@dataclass(frozen=True)
class Evidence:
    """A signed verdict, bound to the digests of what was judged.

    ``payload_bytes`` is the exact canonical JSON that was signed; store it as
    is. The other fields restate it for convenience, and ``verify`` checks
    that they still do.
    """

    checker: str
    version: int
    verdict: CheckVerdict
    reason: str
    digests: Mapping[str, str]
    details: Mapping[str, Any]
    payload_bytes: bytes
    signature: bytes
    key_id: str

    @property
    def permits_commit(self) -> bool:
        return self.verdict.permits_commit

    def covers(self, digest: str) -> bool:
        """Whether this evidence speaks about the artefact with ``digest``."""
        return digest in self.digests.values()

    def verify(self, public_key: bytes) -> bool:
        """Signature valid, made by ``public_key``, over exactly these fields.

        False, never an exception, for anything else — including a field
        edited after signing while the signed bytes were left intact.
        """
        try:
            restated = canonical_json(
                _evidence_payload(
                    self.checker,
                    self.version,
                    self.verdict,
                    self.reason,
                    self.digests,
                    self.details,
                    self.key_id,
                )
            )
            same_key = key_id_for(public_key) == self.key_id
        except (ValueError, TypeError, AttributeError):
            return False
        return (
            same_key
            and restated == self.payload_bytes
            and verify(self.payload_bytes, self.signature, public_key)
        )


# ── the contract ─────────────────────────────────────────────────────────────


class Checker(ABC):
    """A model-free decider. Subclasses implement ``judge`` and never ``check``.

    ``name`` and ``version`` go into every piece of evidence: a verdict means
    something only against a specific checker at a specific version.
    ``settings`` is whatever configures the verdict (a schema, a pattern, a
    command line); its digest is bound into every piece of evidence too.
    Grants are checked here, at configuration time, and again by ``check()``
    before every run.
    """

    def __init__(
        self,
        name: str,
        version: int,
        *,
        grants: Iterable[str] = (),
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise CheckerConfigError("a checker needs a non-blank name")
        # The reference's version is a u32; staying inside it also keeps it exact in JSON.
        if not isinstance(version, int) or isinstance(version, bool) or not 0 <= version < 2**32:
            raise CheckerConfigError(f"checker {name!r}: version must be an integer in [0, 2**32)")
        if isinstance(grants, str):
            raise CheckerConfigError(f"checker {name!r}: grants are a collection of strings")
        self.name = name
        self.version = version
        self.grants = frozenset(grants)
        ensure_model_free(name, self.grants)
        try:
            self.settings_digest = sha256_hex(canonical_json(dict(settings or {})))
        except (ValueError, TypeError) as exc:
            raise CheckerConfigError(f"checker {name!r}: settings are not JSON: {exc}") from exc

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # The contract lives in check(); a subclass that replaced it would opt
        # out of the ceiling, the binding and the signature at once.
        super().__init_subclass__(**kwargs)
        if "check" in cls.__dict__:
            raise TypeError(f"{cls.__name__} overrides check(); implement judge() instead")

    @abstractmethod
    def judge(self, inputs: CheckInput) -> Judgement:
        """Decide. Must be a pure function of ``inputs`` and the settings.

        Return ``Judgement.inconclusive`` when no decision is possible. An
        exception is treated the same way by ``check()``.
        """

    @final
    def check(self, inputs: CheckInput, signer: Signer) -> Evidence:
        """Refuse over-authorised checkers, judge, bind the verdict, and sign.

        Raises ``GrantRefused`` (before ``judge`` runs), ``InputNotAddressable``
        or ``SigningFailed``; in each case there is no evidence.
        """
        # Before anything runs: a checker that could reach a reasoner does not
        # get to produce a verdict, even a correct one.
        ensure_model_free(self.name, self.grants)
        try:
            digests = inputs.digests()
        except (ValueError, TypeError, AttributeError) as exc:
            raise InputNotAddressable(
                self.name, f"checker {self.name!r} could not address its inputs: {exc}"
            ) from exc
        digests["settings"] = self.settings_digest
        judgement = self._judge_once(inputs)
        # Whatever a tool printed must reach the database as it was signed.
        reason = storable(_truncate(judgement.reason))
        details = storable_json(dict(judgement.details))

        try:
            key_id = signer.key_id
            payload = _evidence_payload(
                self.name,
                self.version,
                judgement.verdict,
                reason,
                {**judgement.also, **digests},
                details,
                key_id,
            )
            signed = signer.sign(payload)
            # A signature that does not verify is no signature: better no
            # evidence than evidence nobody can check.
            valid = signed.key_id == key_id and verify(
                signed.payload_bytes, signed.signature, signer.public_key
            )
        except Exception as exc:
            raise SigningFailed(
                self.name, f"the verdict from {self.name!r} could not be signed: {exc}"
            ) from exc
        if not valid:
            raise SigningFailed(self.name, f"the signature on {self.name!r}'s verdict is invalid")

        return Evidence(
            checker=self.name,
            version=self.version,
            verdict=judgement.verdict,
            reason=reason,
            digests=payload["digests"],
            details=payload["details"],
            payload_bytes=signed.payload_bytes,
            signature=signed.signature,
            key_id=key_id,
        )

    def _judge_once(self, inputs: CheckInput) -> Judgement:
        # Python cannot make judge() infallible by type, so a raise is mapped
        # onto the one "no answer" there is: INCONCLUSIVE, which escalates.
        try:
            judgement = self.judge(inputs)
        except Exception as exc:
            return Judgement.inconclusive(f"checker raised {type(exc).__name__}: {exc}")
        if not isinstance(judgement, Judgement):
            return Judgement.inconclusive(
                f"checker returned {type(judgement).__name__}, not a Judgement"
            )
        return judgement

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, version={self.version})"
