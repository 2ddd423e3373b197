"""The ledger: signed records as leaves of one Merkle tree, and the keys that sign them.

The ledger knows its entries' kinds (decision, evidence: ``merkle.ENTRY_KINDS``)
and the id of the row each records, never the app that owns those rows.
Every table but the witnesses' is append-only: triggers (``immutability``) make
the database refuse UPDATE and DELETE on them, but for setting an entry's index,
once.
"""

from django.db import models
from django.db.models import Q


class SigningKey(models.Model):
    """The public half of a server signing key. The private half never enters the database.

    A row is a label, never a trust anchor (``keys.trusted_keys``).
    """

    key_id = models.CharField(max_length=64, unique=True)
    public_key = models.CharField(max_length=64, help_text="base64")
    created_at = models.DateTimeField(auto_now_add=True)
    retired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # Its table from before it moved here from review: renaming it would mean
        # re-creating its append-only triggers.
        db_table = "review_signingkey"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.key_id


class LedgerEntry(models.Model):
    """One leaf. ``entry`` is the exact text hashed (``merkle.entry_bytes``).

    Stored with no ``leaf_index``, in its writer's transaction; the sequencer
    sets it, once (``services.sequence``).
    """

    class Kind(models.TextChoices):
        DECISION = "decision"
        EVIDENCE = "evidence"

    leaf_index = models.BigIntegerField(
        unique=True, null=True, blank=True, help_text="null until the sequencer sets it, once"
    )
    kind = models.CharField(max_length=8, choices=Kind.choices)
    # The id of the row the entry records, in its kind's column. The database still
    # refuses an id whose row does not exist (the foreign keys of migration 0001).
    decision_id = models.BigIntegerField(null=True, blank=True, unique=True)
    evidence_id = models.BigIntegerField(null=True, blank=True, unique=True)
    entry = models.TextField(help_text="Canonical JSON of {kind, payload, signature, key_id}.")
    leaf_hash = models.CharField(max_length=64, help_text="hex SHA-256(0x00 || entry)")
    created_at = models.DateTimeField(auto_now_add=True)
    sequenced_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "ledger_entry"
        ordering = ["leaf_index"]
        verbose_name_plural = "ledger entries"
        indexes = [
            # What the sequencer reads: the few entries waiting for their index.
            models.Index(
                fields=["id"],
                condition=Q(leaf_index__isnull=True),
                name="ledger_entry_unsequenced",
            )
        ]
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(kind="decision", decision_id__isnull=False, evidence_id__isnull=True)
                    | Q(kind="evidence", evidence_id__isnull=False, decision_id__isnull=True)
                ),
                name="ledger_entry_kind_matches_row",
            ),
            models.CheckConstraint(condition=Q(leaf_index__gte=0), name="ledger_entry_index_gte_0"),
        ]

    def __str__(self) -> str:
        return f"ledger entry {self.leaf_index} ({self.kind})"


class LedgerNode(models.Model):
    """The hash of a perfect subtree: leaves ``[index·2^level, (index+1)·2^level)``, level ≥ 1."""

    level = models.PositiveSmallIntegerField()
    node_index = models.BigIntegerField()
    hash = models.CharField(max_length=64)

    class Meta:
        db_table = "ledger_node"
        constraints = [
            models.UniqueConstraint(fields=["level", "node_index"], name="ledger_node_once"),
        ]

    def __str__(self) -> str:
        return f"ledger node (level {self.level}, index {self.node_index})"


class LedgerCheckpoint(models.Model):
    """A signed tree head. ``note`` (a C2SP signed note) is authoritative; the rest restates it."""

    origin = models.CharField(max_length=200)
    tree_size = models.BigIntegerField(db_index=True)
    root_hash = models.CharField(max_length=64)
    timestamp = models.DateTimeField()
    note = models.TextField()
    key_id = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "ledger_checkpoint"
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"checkpoint {self.tree_size} @ {self.timestamp:%Y-%m-%d %H:%M:%S}"


class LedgerCosignature(models.Model):
    """A witness's cosignature of a checkpoint (C2SP tlog-cosignature), as it answered it.

    Insert-only, like the checkpoint it belongs to. Verifiers re-check ``line``
    against the witness keys in their own configuration, never trusting this row.
    """

    checkpoint = models.ForeignKey(
        LedgerCheckpoint, on_delete=models.PROTECT, related_name="cosignatures"
    )
    witness = models.CharField(max_length=200, help_text="the witness's key name")
    key_id = models.CharField(max_length=8, help_text="hex, the signed-note key ID")
    timestamp = models.BigIntegerField(help_text="POSIX seconds, when the witness cosigned")
    line = models.TextField(help_text="the note signature line, verbatim, without its newline")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "ledger_cosignature"
        ordering = ["witness", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["checkpoint", "witness", "key_id"], name="ledger_cosignature_once"
            ),
        ]

    def __str__(self) -> str:
        return f"cosignature by {self.witness} of checkpoint {self.checkpoint_id}"


class LedgerWitness(models.Model):
    """What this log knows of one configured witness: mutable state, not evidence.

    The witnesses themselves are configured in REVIEWAPP_LEDGER_WITNESSES; a row
    is created the first time a checkpoint is submitted to one.
    """

    vkey = models.CharField(max_length=300, unique=True)
    name = models.CharField(max_length=200)
    known_size = models.BigIntegerField(
        default=0, help_text="the tree size the witness last cosigned for this log"
    )
    alert = models.TextField(
        blank=True, help_text="set when the witness refused a checkpoint; what to do about it"
    )
    alert_at = models.DateTimeField(null=True, blank=True)
    unreachable = models.TextField(blank=True, help_text="the last failure to reach it")
    unreachable_since = models.DateTimeField(null=True, blank=True)
    last_cosigned_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "ledger_witness"
        ordering = ["name"]
        verbose_name_plural = "ledger witnesses"

    def __str__(self) -> str:
        return self.name
