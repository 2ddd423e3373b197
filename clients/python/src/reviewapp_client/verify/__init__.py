"""Verifying what reviewapp signs, with nothing but PyNaCl, rfc8785 and the public keys.

One implementation, used by auditors (``reviewapp-verify``, see ``cli``), by
agents (``verify_decision``, ``verify_decision_reviews``, ``verify_webhook``)
and by the server itself, which signs with the same canonical form and checks
its own ledger with the same code:

- ``signing``: RFC 8785 canonical JSON, key ids, ed25519 signature checks;
- ``merkle``: RFC 6962 leaves and roots, inclusion and consistency proofs,
  C2SP signed notes and checkpoints;
- ``cosignature``: witness verifier keys, C2SP tlog-cosignature lines and
  k-of-n witness policies;
- ``ledger``: one ledger record checked on its own, the ledger rebuilt in order;
- ``export``: a whole ledger export or the API's decisions, file by file;
- ``files``: reading keys (the log's and the witnesses'), checkpoints, witness logs and proofs;
- ``messages``: one decision (and the reviews it names) or one webhook delivery as it arrives.
"""

from .export import Report, verify_file
from .files import load_public_keys
from .ledger import Failure
from .messages import (
    VerificationError,
    verify_decision,
    verify_decision_reviews,
    verify_webhook,
)

__all__ = [
    "Failure",
    "Report",
    "VerificationError",
    "load_public_keys",
    "verify_decision",
    "verify_decision_reviews",
    "verify_webhook",
    "verify_file",
]
