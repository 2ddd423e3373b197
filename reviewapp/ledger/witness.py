"""The witness log: every checkpoint the server signs, kept where the database cannot reach.

A database administrator who deletes records *and* the checkpoints covering
them, then waits for the next checkpoint, leaves a ledger that is consistent
with itself. The witness log remembers the checkpoints they deleted, and
`verify_ledger` checks the tree against every one of them.

Two sinks, either or both (settings):

- ``REVIEWAPP_LEDGER_WITNESS_FILE`` (default ``<REVIEWAPP_VAR_DIR>/ledger-witness.jsonl``):
  one JSON line per checkpoint, ``{"tree_size": N, "checkpoint": "<signed note>"}``,
  appended with a single ``O_APPEND`` write. Keep it on a disk (or ship it to a
  place) the database administrator cannot write.
- ``REVIEWAPP_LEDGER_WITNESS_URL``: the signed note is POSTed there
  (``text/plain``) by a Celery task with a short timeout, retried with backoff;
  the witness keeps them and can hand them back for ``verify_ledger --witness``.

Both happen after the checkpoint's transaction commits: a witness must never
hold a checkpoint of a tree that was rolled back. So does the submission to
the C2SP witnesses of ``REVIEWAPP_LEDGER_WITNESSES``, which cosign it
(``cosigning.py``): the file and the URL are this host's own, simpler anchor;
the witnesses are other parties' and answer with signatures.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from django.conf import settings
from django.db import transaction

log = logging.getLogger(__name__)

POST_TIMEOUT_SECONDS = 3.0


def witness_line(tree_size: int, note: str) -> str:
    return json.dumps({"tree_size": tree_size, "checkpoint": note}, separators=(",", ":")) + "\n"


def witness_file_append(path: str | os.PathLike, tree_size: int, note: str) -> None:
    """Append one line. One write on an O_APPEND descriptor: concurrent writers never interleave."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = witness_line(tree_size, note).encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _witness_after_commit(checkpoint_id: int, tree_size: int, note: str) -> None:
    if settings.REVIEWAPP_LEDGER_WITNESS_FILE:
        try:
            witness_file_append(settings.REVIEWAPP_LEDGER_WITNESS_FILE, tree_size, note)
        except OSError:
            # The checkpoint is committed; verify_ledger reports it as never witnessed.
            log.exception(
                "could not append checkpoint %s to the witness log %s",
                checkpoint_id,
                settings.REVIEWAPP_LEDGER_WITNESS_FILE,
            )
    if settings.REVIEWAPP_LEDGER_WITNESS_URL:
        from .tasks import ledger_witness_post

        ledger_witness_post.delay(checkpoint_id)
    if settings.REVIEWAPP_LEDGER_WITNESSES:
        from .cosigning import witness_rows
        from .tasks import ledger_witness_submit

        for row in witness_rows():
            ledger_witness_submit.delay(checkpoint_id, row.pk)


def checkpoint_witness(*, checkpoint_id: int, tree_size: int, note: str) -> None:
    """Hand a just-signed checkpoint to the witnesses once its transaction commits."""
    transaction.on_commit(lambda: _witness_after_commit(checkpoint_id, tree_size, note))
