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

import json
import math
import os
import re
import selectors
import signal
import subprocess
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, final

import jsonschema
import regex

from .constraints import ConstraintError, ConstraintSet
from .signing import Signer, canonical_json, key_id_for, sha256_hex, verify

EVIDENCE_SCHEMA = "reviewapp.evidence/1"

# ``domain:action`` pairs a checker may hold, for any resource. A checker has
# to see what it judges (fs read/list/stat) and the useful ones run a tool
# (proc:exec). Everything else is out: net and secret are the only ways to
# reach a model provider, time and rand are the ordinary sources of a verdict
# that differs between two runs, and fs:write would let a checker make its own
# verdict true. Confining what a child process actually does is the sandbox's
# job; this decides what authority is legitimate.
CHECKER_CEILING = frozenset({"fs:read", "fs:list", "fs:stat", "proc:exec"})

# Digest names check() binds itself; a judgement may not rebind them.
INPUT_DIGESTS = ("content", "thought_process", "metadata", "settings")

# A reason is read by people and by the next attempt's model; an unbounded one
# (a tool dumping megabytes on stderr) helps neither and bloats every row.
REASON_LIMIT = 4000

_GRANT = re.compile(
    r"(?P<domain>[a-z][a-z0-9_-]*):(?P<action>[a-z][a-z0-9_-]*)(?::(?P<resource>.+))?"
)
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


# ── errors ───────────────────────────────────────────────────────────────────


class CheckError(Exception):
    """No evidence was produced, so nothing commits. Never a checker's opinion."""

    def __init__(self, checker: str, message: str) -> None:
        super().__init__(message)
        self.checker = checker


class GrantRefused(CheckError):
    """The checker declared authority a checker may not hold."""

    def __init__(self, checker: str, grants: Iterable[str], message: str) -> None:
        super().__init__(checker, message)
        self.grants = tuple(grants)


class GrantOverreach(GrantRefused):
    """Some grant is outside the ceiling."""


class GrantUndecidable(GrantRefused):
    """Containment could not be proved, which is a refusal, never a pass."""


class InputNotAddressable(CheckError):
    """The inputs could not be digested, so evidence could not name them."""


class SigningFailed(CheckError):
    """The verdict could not be signed; there is no evidence."""


class CheckerConfigError(ValueError):
    """A checker's settings are unusable; raised when it is configured."""


# ── grants ───────────────────────────────────────────────────────────────────


def _within_ceiling(grant: object) -> bool | None:
    """True inside the ceiling, False outside, None when it cannot be decided.

    Grants are ``domain:action`` or ``domain:action:resource``. Something that
    does not parse as a grant is not in the ceiling. A templated resource
    (``{workspace}``) is symbolic, so containment is unknown.
    """
    match = _GRANT.fullmatch(grant) if isinstance(grant, str) else None
    if match is None or f"{match['domain']}:{match['action']}" not in CHECKER_CEILING:
        return False
    resource = match["resource"] or ""
    if "{" in resource or "}" in resource:
        return None
    return True


def ensure_model_free(checker_name: str, grants: Iterable[str]) -> None:
    """Refuse grants a checker may not hold.

    Raises ``GrantOverreach`` naming every grant outside the ceiling (sorted,
    so the message is stable), else ``GrantUndecidable`` naming every grant
    whose containment cannot be decided. A definite overreach outranks an
    unknown, as in three-valued conjunction.
    """
    grants = tuple(grants)
    outside = sorted(str(g) for g in grants if _within_ceiling(g) is False)
    if outside:
        raise GrantOverreach(
            checker_name,
            outside,
            f"checker {checker_name!r} declares {', '.join(outside)}, outside what a checker "
            f"may hold ({', '.join(sorted(CHECKER_CEILING))})",
        )
    unknown = sorted(str(g) for g in grants if _within_ceiling(g) is None)
    if unknown:
        raise GrantUndecidable(
            checker_name,
            unknown,
            f"cannot prove checker {checker_name!r}'s grants {', '.join(unknown)} are within "
            f"what a checker may hold",
        )


def _grant_covers(grant: str, domain_action: str, resource: str) -> bool:
    """Whether ``grant`` authorises ``domain_action`` on ``resource``.

    A grant without a resource covers every resource; in a resource pattern
    ``**`` matches anything and ``*`` anything but ``/``.
    """
    match = _GRANT.fullmatch(grant)
    if match is None or f"{match['domain']}:{match['action']}" != domain_action:
        return False
    if match["resource"] is None:
        return True
    pattern = "".join(
        ".*" if part == "**" else "[^/]*" if part == "*" else re.escape(part)
        for part in re.split(r"(\*\*|\*)", match["resource"])
    )
    return re.fullmatch(pattern, resource, re.DOTALL) is not None


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
        reason = _truncate(judgement.reason)

        try:
            key_id = signer.key_id
            payload = _evidence_payload(
                self.name,
                self.version,
                judgement.verdict,
                reason,
                {**judgement.also, **digests},
                judgement.details,
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


# ── concrete checkers ────────────────────────────────────────────────────────


class ConstraintsChecker(Checker):
    """A mandate lowered by the constraint grammar.

    Pass iff every checkable constraint holds; a failure's reason is the
    feedback lines. Clauses the grammar could not lower are never counted as
    satisfied; they travel in the evidence's details as ``unenforced`` so a
    reader sees what the verdict did not cover.
    """

    def __init__(self, name: str, version: int, mandate: str) -> None:
        if not isinstance(mandate, str):
            raise CheckerConfigError(f"checker {name!r}: a mandate is text")
        super().__init__(name, version, settings={"mandate": mandate})
        try:
            self._constraints = ConstraintSet.from_text(mandate)
        except ConstraintError as exc:
            raise CheckerConfigError(f"checker {name!r}: mandate refused: {exc}") from exc
        self.mandate = mandate

    def judge(self, inputs: CheckInput) -> Judgement:
        result = self._constraints.evaluate(inputs.content)
        details = {
            "csr": result.csr,
            "error": result.error,
            "unenforced": list(result.unenforced),
        }
        if result.is_satisfied:
            return Judgement.passed(details=details)
        feedback = "\n".join(result.feedback()) or "the mandate is not satisfied"
        if result.undecided:
            # A clause that could not be evaluated decides nothing: escalate.
            return Judgement.inconclusive(feedback, details=details)
        return Judgement.failed(feedback, details=details)


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"duplicate key {key!r}")
        obj[key] = value
    return obj


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _json_pointer(path: Iterable[str | int]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path) or "/"


class JsonSchemaChecker(Checker):
    """The proposal content must be JSON valid against ``schema``.

    Content that is not JSON is the proposal's fault, so it fails, with the
    parse error as reason. Strict JSON: NaN/Infinity and duplicate keys are
    refused, since parsers disagree about what they mean. ``format`` stays an
    annotation (not asserted) because its checks depend on which optional
    libraries happen to be installed, and a verdict must not. ``$ref`` is
    never fetched over the network; an unresolvable one is INCONCLUSIVE.
    """

    MAX_ERRORS = 20

    def __init__(self, name: str, version: int, schema: Mapping[str, Any]) -> None:
        super().__init__(name, version, settings={"schema": schema})
        if not isinstance(schema, Mapping | bool):
            raise CheckerConfigError(f"checker {name!r}: a schema is an object or a boolean")
        try:
            validator_class = jsonschema.validators.validator_for(schema, default=None)
        except TypeError:  # an unhashable "$schema"
            validator_class = None
        if validator_class is None:
            if isinstance(schema, Mapping) and "$schema" in schema:
                raise CheckerConfigError(f"checker {name!r}: unknown $schema {schema['$schema']!r}")
            # Pinned rather than "latest", so upgrading jsonschema cannot change a verdict.
            validator_class = jsonschema.Draft202012Validator
        try:
            validator_class.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise CheckerConfigError(f"checker {name!r}: invalid schema: {exc.message}") from exc
        self.schema = schema
        self._validator = validator_class(schema)

    def judge(self, inputs: CheckInput) -> Judgement:
        try:
            document = json.loads(
                inputs.content,
                object_pairs_hook=_object_without_duplicates,
                parse_constant=_refuse_constant,
            )
        except ValueError as exc:
            return Judgement.failed(f"the proposal is not valid JSON: {exc}")
        # In document order (array indices numerically), so a reader can follow along.
        errors = sorted(
            self._validator.iter_errors(document),
            key=lambda e: ([(isinstance(p, str), p) for p in e.absolute_path], e.message),
        )
        if not errors:
            return Judgement.passed()
        lines = [
            f"at {_json_pointer(e.absolute_path)}: {e.message}" for e in errors[: self.MAX_ERRORS]
        ]
        if len(errors) > self.MAX_ERRORS:
            lines.append(f"… and {len(errors) - self.MAX_ERRORS} more")
        return Judgement.failed("\n".join(lines))


class RegexChecker(Checker):
    """The proposal content must (or must not) contain a match for ``pattern``.

    Searches anywhere in the content; anchor the pattern to match it whole.
    Uses the ``regex`` package for its match timeout: a pathological pattern
    is INCONCLUSIVE instead of a hung worker.
    """

    def __init__(
        self,
        name: str,
        version: int,
        pattern: str,
        must_match: bool = True,
        *,
        timeout_seconds: float = 1.0,
    ) -> None:
        super().__init__(name, version, settings={"pattern": pattern, "must_match": must_match})
        try:
            self._compiled = regex.compile(pattern)
        except (regex.error, TypeError) as exc:
            raise CheckerConfigError(f"checker {name!r}: invalid pattern: {exc}") from exc
        if not isinstance(must_match, bool):
            raise CheckerConfigError(f"checker {name!r}: must_match is true or false")
        if not _positive_seconds(timeout_seconds):
            raise CheckerConfigError(f"checker {name!r}: timeout must be a positive number")
        self.pattern = pattern
        self.must_match = must_match
        self.timeout_seconds = timeout_seconds

    def judge(self, inputs: CheckInput) -> Judgement:
        try:
            found = self._compiled.search(inputs.content, timeout=self.timeout_seconds)
        except TimeoutError:
            return Judgement.inconclusive(
                f"matching /{self.pattern}/ did not finish within {self.timeout_seconds}s"
            )
        if self.must_match and found is None:
            return Judgement.failed(f"the proposal does not match /{self.pattern}/")
        if not self.must_match and found is not None:
            return Judgement.failed(
                f"the proposal must not match /{self.pattern}/ but does at character "
                f"{found.start()}: {_truncate(found.group(), 200)!r}"
            )
        return Judgement.passed()


# The child sees nothing of the parent's environment: no API keys, no proxy
# settings, no credentials — nothing a model provider could be reached with.
COMMAND_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
OUTPUT_LIMIT = 64 * 1024
_POLL_SECONDS = 0.05


@dataclass(frozen=True)
class _Completed:
    returncode: int | None  # None: killed at the deadline
    stdout: str
    stderr: str


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _run_bounded(argv: list[str], stdin: bytes, timeout: float, cwd: str) -> _Completed:
    """Run ``argv`` with ``stdin``, keeping at most OUTPUT_LIMIT bytes of each stream.

    The child leads its own process group. Once the leader exits, or the
    deadline passes, the whole group is killed, so nothing it started can
    hold the pipes open or outlive the check.
    """
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=COMMAND_ENV,
        shell=False,
        start_new_session=True,
    )
    captured = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    pending = memoryview(stdin)
    deadline = time.monotonic() + timeout
    timed_out = False
    with selectors.DefaultSelector() as selector:
        try:
            for stream in captured:
                os.set_blocking(stream.fileno(), False)
                selector.register(stream, selectors.EVENT_READ)
            if pending:
                os.set_blocking(proc.stdin.fileno(), False)
                selector.register(proc.stdin, selectors.EVENT_WRITE)
            else:
                proc.stdin.close()

            while selector.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                for key, _ in selector.select(min(remaining, _POLL_SECONDS)):
                    if key.fileobj is proc.stdin:
                        try:
                            pending = pending[os.write(proc.stdin.fileno(), pending[:65536]) :]
                        except BlockingIOError:
                            continue
                        except BrokenPipeError:
                            pending = pending[:0]  # the child stopped reading; that is its call
                        if not pending:
                            selector.unregister(proc.stdin)
                            proc.stdin.close()
                        continue
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        selector.unregister(key.fileobj)
                        continue
                    sink = captured[key.fileobj]
                    # One byte past the limit is kept only to tell that it was passed.
                    sink += chunk[: max(0, OUTPUT_LIMIT + 1 - len(sink))]
                if proc.poll() is not None:
                    _kill_group(proc.pid)  # stragglers would keep the pipes open

            if not timed_out:
                try:
                    proc.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    timed_out = True
        finally:
            _kill_group(proc.pid)
            proc.wait()
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                stream.close()

    def text(stream) -> str:
        data = captured[stream]
        suffix = "… [truncated]" if len(data) > OUTPUT_LIMIT else ""
        return data[:OUTPUT_LIMIT].decode("utf-8", "replace").strip() + suffix

    return _Completed(None if timed_out else proc.returncode, text(proc.stdout), text(proc.stderr))


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:  # real-time and other unnamed signals
        return f"signal {number}"


class CommandChecker(Checker):
    """Run a configured executable on the proposal.

    No shell; the proposal content arrives on stdin (UTF-8). The child gets a
    clean environment (``COMMAND_ENV`` only) and a fresh temporary working
    directory that is removed afterwards. Exit 0 passes; exit 1 fails with
    stderr as the reason (stdout if stderr is empty); a timeout, a signal,
    any other exit status or an executable that cannot be started is
    INCONCLUSIVE. Requires a ``proc:exec`` grant covering ``argv[0]``.
    """

    def __init__(
        self,
        name: str,
        version: int,
        argv: list[str],
        timeout_seconds: float,
        grants: Iterable[str],
    ) -> None:
        if (
            not isinstance(argv, list | tuple)
            or not argv
            or not all(isinstance(a, str) and a and "\0" not in a for a in argv)
        ):
            raise CheckerConfigError(f"checker {name!r}: argv must be a non-empty list of strings")
        if not _positive_seconds(timeout_seconds):
            raise CheckerConfigError(f"checker {name!r}: timeout must be a positive number")
        super().__init__(
            name,
            version,
            grants=grants,
            settings={"argv": list(argv), "timeout_seconds": timeout_seconds},
        )
        self.argv = list(argv)
        self.timeout_seconds = timeout_seconds
        if not self._may_exec():
            raise CheckerConfigError(
                f"checker {name!r}: running {argv[0]!r} needs a proc:exec grant covering it"
            )

    def _may_exec(self) -> bool:
        return any(_grant_covers(g, "proc:exec", self.argv[0]) for g in self.grants)

    def judge(self, inputs: CheckInput) -> Judgement:
        if not self._may_exec():
            return Judgement.inconclusive(f"not granted proc:exec for {self.argv[0]!r}")
        with tempfile.TemporaryDirectory(
            prefix="reviewapp-check-", ignore_cleanup_errors=True
        ) as workdir:
            try:
                done = _run_bounded(
                    self.argv, inputs.content.encode("utf-8"), self.timeout_seconds, workdir
                )
            except OSError as exc:
                return Judgement.inconclusive(f"could not run {self.argv[0]!r}: {exc.strerror}")
        if done.returncode is None:
            return Judgement.inconclusive(
                f"{self.argv[0]!r} timed out after {self.timeout_seconds}s"
            )
        if done.returncode == 0:
            return Judgement.passed()
        if done.returncode == 1:
            return Judgement.failed(
                done.stderr or done.stdout or f"{self.argv[0]!r} exited 1 without output"
            )
        if done.returncode < 0:
            what = f"was killed by {_signal_name(-done.returncode)}"
        else:
            what = f"exited {done.returncode}"
        return Judgement.inconclusive(
            f"{self.argv[0]!r} {what}" + (f": {done.stderr}" if done.stderr else "")
        )
