"""The workers' part, for tests where an agent waits on a live server."""

import threading

from reviewapp.review.models import Proposal
from tests.webhooks.helpers import run_pipeline


def evaluate_once_submitted(external_ref: str) -> threading.Thread:
    """Judge the proposal with this external_ref once it arrives, as the workers would."""

    def run():
        for _ in range(1000):
            row = Proposal.objects.filter(external_ref=external_ref).first()
            if row is not None:
                run_pipeline(row)
                return
            threading.Event().wait(0.01)
        raise AssertionError(f"{external_ref} was never submitted")

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def signing_key_exists() -> None:
    """The test server makes its signing key on first use; production has one from the start."""
    from reviewapp.ledger.keys import server_signer

    server_signer()
