"""Deterministic, model-free checkers and the signed evidence they produce.

The contract (verdicts, judgements, evidence, the ``Checker`` template method)
is in ``contract``; the authority a checker may hold in ``grants``; each kind
of checker in a module of its own. The public names are re-exported here.
"""

from .command import CommandChecker
from .constraints import ConstraintsChecker
from .contract import (
    EVIDENCE_SCHEMA,
    INPUT_DIGESTS,
    REASON_LIMIT,
    Checker,
    CheckInput,
    CheckVerdict,
    Evidence,
    Judgement,
)
from .errors import (
    CheckerConfigError,
    CheckError,
    GrantOverreach,
    GrantRefused,
    GrantUndecidable,
    InputNotAddressable,
    SigningFailed,
)
from .grants import CHECKER_CEILING, ensure_model_free
from .json_schema import JsonSchemaChecker
from .regex import RegexChecker
from .sandbox import COMMAND_ENV, OUTPUT_LIMIT, Sandbox

__all__ = [
    "CHECKER_CEILING",
    "COMMAND_ENV",
    "EVIDENCE_SCHEMA",
    "INPUT_DIGESTS",
    "OUTPUT_LIMIT",
    "REASON_LIMIT",
    "CheckError",
    "CheckInput",
    "CheckVerdict",
    "Checker",
    "CheckerConfigError",
    "CommandChecker",
    "ConstraintsChecker",
    "Evidence",
    "GrantOverreach",
    "GrantRefused",
    "GrantUndecidable",
    "InputNotAddressable",
    "JsonSchemaChecker",
    "Judgement",
    "RegexChecker",
    "Sandbox",
    "SigningFailed",
    "ensure_model_free",
]
