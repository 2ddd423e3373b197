"""Telling listeners, at commit, that a proposal became final (decided or escalated).

On PostgreSQL the transaction that makes a proposal final sends
`pg_notify(CHANNEL, '<proposal id>')`; PostgreSQL delivers it when, and only
if, that transaction commits, so a listener never reads a decision before it
is visible. The MCP watch listens, so a waiting `wait_for_review` returns
without waiting for its next poll. On SQLite nothing is sent (the watch polls).
"""

from django.db import connection

CHANNEL = "reviewapp_final"


def proposal_final_notify(*, proposal_id: int) -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL, str(proposal_id)])
