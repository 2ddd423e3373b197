"""reviewapp-client: submit agent output, wait for the verdict, verify what reviewapp signs."""

from .client import (
    FINAL,
    ApiError,
    Client,
    Decision,
    Judgement,
    Proposal,
    Submitted,
    WaitTimeout,
)
from .verify import VerificationError, verify_decision, verify_webhook

__all__ = [
    "FINAL",
    "ApiError",
    "Client",
    "Decision",
    "Judgement",
    "Proposal",
    "Submitted",
    "VerificationError",
    "WaitTimeout",
    "verify_decision",
    "verify_webhook",
]
