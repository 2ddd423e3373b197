"""Put every decision and piece of evidence stored before the ledger existed into it.

Entries go in the order they were created (evidence before a decision made in
the same instant, since a decision binds its evidence), exactly as the live
append path would have put them.
"""

from django.db import migrations

from reviewapp.core.merkle import CompactRange, entry_bytes, leaf_hash


def backfill(apps, schema_editor):
    alias = schema_editor.connection.alias
    Decision = apps.get_model("review", "Decision")
    Evidence = apps.get_model("review", "Evidence")
    LedgerEntry = apps.get_model("ledger", "LedgerEntry")
    LedgerNode = apps.get_model("ledger", "LedgerNode")
    LedgerLock = apps.get_model("ledger", "LedgerLock")
    LedgerLock.objects.using(alias).get_or_create(singleton=True)
    if LedgerEntry.objects.using(alias).exists():
        return
    rows = [
        (e.created_at, 0, e.pk, "evidence", e) for e in Evidence.objects.using(alias).all()
    ] + [(d.created_at, 1, d.pk, "decision", d) for d in Decision.objects.using(alias).all()]
    rows.sort(key=lambda r: r[:3])
    compact = CompactRange()
    entries, nodes = [], []
    for index, (_, _, _, kind, row) in enumerate(rows):
        entry = entry_bytes(kind, row.payload, row.signature, row.key_id)
        leaf = leaf_hash(entry)
        entries.append(
            LedgerEntry(
                leaf_index=index,
                kind=kind,
                decision=row if kind == "decision" else None,
                evidence=row if kind == "evidence" else None,
                entry=entry.decode(),
                leaf_hash=leaf.hex(),
            )
        )
        for level, node_index, h in compact.append(leaf):
            nodes.append(LedgerNode(level=level, node_index=node_index, hash=h.hex()))
    LedgerEntry.objects.using(alias).bulk_create(entries, batch_size=500)
    LedgerNode.objects.using(alias).bulk_create(nodes, batch_size=500)


class Migration(migrations.Migration):
    dependencies = [("ledger", "0001_initial")]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
