"""Telling listeners, after commit, that a proposal became final (decided or escalated).

On PostgreSQL, once the transaction that makes a proposal final commits,
`pg_notify(CHANNEL, '<proposal id>')` is sent, so a listener never reads a
decision before it is visible and hears nothing of a rollback. The MCP watch
listens, so a waiting `wait_for_review` returns without waiting for its next
poll. On SQLite nothing is sent (the watch polls).
"""

from django.db import connection, transaction

CHANNEL = "reviewapp_final"


def proposal_final_notify(*, proposal_id: int) -> None:
    if connection.vendor == "postgresql":
        # After COMMIT, not inside the transaction: PostgreSQL serialises the commits
        # of transactions that notify, and decisions commit side by side. (A decision's
        # hook runs after the sequencer's, so a listener mostly reads it indexed.)
        transaction.on_commit(lambda: _notify(proposal_id))


def _notify(proposal_id: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL, str(proposal_id)])
