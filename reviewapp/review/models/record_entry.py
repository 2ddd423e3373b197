"""Where review's signed records sit in the ledger: the ledger's table, read from review's side."""

from django.db import models

from .decision import Decision
from .evidence import Evidence


class RecordEntry(models.Model):
    """The ledger entry of a decision or a piece of evidence, as review reads it.

    The ledger's own table (``ledger.LedgerEntry`` writes it, knowing only the
    ids of the rows it records), seen here with those ids as relations, so that
    review joins its records to their entries (``decision.ledger_entry``).
    Unmanaged and read-only: the ledger owns the table and its migrations.
    """

    leaf_index = models.BigIntegerField(null=True, unique=True)
    kind = models.CharField(max_length=8)
    decision = models.OneToOneField(
        Decision, null=True, on_delete=models.PROTECT, related_name="ledger_entry"
    )
    evidence = models.OneToOneField(
        Evidence, null=True, on_delete=models.PROTECT, related_name="ledger_entry"
    )
    entry = models.TextField()
    leaf_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField()
    sequenced_at = models.DateTimeField(null=True)

    class Meta:
        managed = False
        db_table = "ledger_entry"

    def __str__(self) -> str:
        return f"ledger entry {self.leaf_index} ({self.kind})"
