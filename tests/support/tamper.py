"""Tamper with signed records the way a database administrator would have to.

The database refuses UPDATE and DELETE on decisions, evidence and the ledger
(reviewapp/ledger/immutability.py), so simulating tampering means first
switching that off, exactly as someone with owner rights on the database
could: ``ALTER TABLE … DISABLE TRIGGER USER`` on PostgreSQL, dropping the
triggers on SQLite. They are back when the block ends.

    with tampering():
        Decision.objects.filter(pk=pk).update(outcome="rejected")
"""

import json
from contextlib import contextmanager

from django.db import connections

from reviewapp.ledger.immutability import PROTECTED_TABLES, TRIGGER_PREFIX


@contextmanager
def tampering(*tables: str, using: str = "default"):
    tables = tables or PROTECTED_TABLES
    connection = connections[using]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # ALTER TABLE refuses to run while deferred foreign-key checks are
            # queued in the transaction; run them now (as Django's TestCase does).
            settle = "SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED"
            cursor.execute(settle)
            for table in tables:
                cursor.execute(f'ALTER TABLE "{table}" DISABLE TRIGGER USER')
            try:
                yield
            finally:
                with connection.cursor() as again:
                    again.execute(settle)
                    for table in tables:
                        again.execute(f'ALTER TABLE "{table}" ENABLE TRIGGER USER')
            return
        placeholders = ", ".join(["%s"] * len(tables))
        cursor.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' "
            f"AND name LIKE %s AND tbl_name IN ({placeholders})",
            [f"{TRIGGER_PREFIX}_%", *tables],
        )
        saved = cursor.fetchall()
        for name, _ in saved:
            cursor.execute(f'DROP TRIGGER "{name}"')
        try:
            yield
        finally:
            with connection.cursor() as again:
                again.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
                present = {name for (name,) in again.fetchall()}
                for name, sql in saved:
                    if name not in present:
                        again.execute(sql)


def forge_review(review, **signed):
    """Rewrite a review as someone who cannot sign would: the row's columns, its signed
    bytes re-encoded with ``signed`` changed, and the hash of those bytes; the old
    signature stays (call inside ``tampering()``)."""
    from reviewapp.core.signing import canonical_json, sha256_hex
    from reviewapp.review.models import Review

    body = json.loads(review.payload)
    body.update(signed)
    payload = canonical_json(body)
    columns = {k: v for k, v in signed.items() if k in ("outcome", "rationale")}
    Review.objects.filter(pk=review.pk).update(
        payload=payload.decode(), hash=sha256_hex(payload), **columns
    )
