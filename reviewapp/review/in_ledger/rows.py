"""The server's ledger rows checked against the entries they record (``manage.py verify_ledger``).

A row restates what its ledger entry signed; these checks say which column no
longer does. The entry itself is checked by the offline verifier's
``check_entry``, the same code an auditor runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reviewapp_client.verify import merkle
from reviewapp_client.verify.ledger import ENTRY_KEYS, Checked, check_entry, loads

# A decision row's columns that restate its signed payload, and the fact each restates.
DECISION_ROW_COLUMNS = (
    ("outcome", "outcome"),
    ("basis", "basis"),
    ("rationale", "rationale"),
    ("decided_by_name", "decided_by"),
    ("proposal_id", "proposal"),
    ("prev_hash", "prev_hash"),
    ("hash", "hash"),
)


def decision_row_mismatches(row: Mapping[str, Any], facts: Mapping[str, Any]) -> list[str]:
    """Columns of a decision row (by column name) that no longer say what was signed."""
    return [column for column, fact in DECISION_ROW_COLUMNS if row[column] != facts[fact]]


# The layout of the row tuples `check_ledger_rows` takes: a ledger entry joined
# with the decision or evidence row it records.
LEDGER_ROW_FIELDS = (
    "entry",
    "decision_id",
    "evidence_id",
    "decision__payload",
    "decision__signature",
    "decision__key_id",
    "decision__outcome",
    "decision__basis",
    "decision__rationale",
    "decision__decided_by_name",
    "decision__proposal_id",
    "decision__prev_hash",
    "decision__hash",
    "evidence__payload",
    "evidence__signature",
    "evidence__key_id",
    "evidence__checker_name",
    "evidence__checker_version",
    "evidence__verdict",
    "evidence__reason",
)


def _entry_item(text: str) -> tuple[str, str, str, str] | None:
    try:
        fields = loads(text)
    except ValueError:
        return None
    if not isinstance(fields, dict) or fields.keys() != set(ENTRY_KEYS):
        return None
    item = tuple(fields[k] for k in ENTRY_KEYS)
    return item if all(isinstance(v, str) for v in item) else None


def _row_problem(kind: str, row: tuple, item: tuple[str, str, str, str], facts: dict) -> str | None:
    """How the decision/evidence row differs from what its ledger entry signed, if it does."""
    r = dict(zip(LEDGER_ROW_FIELDS, row, strict=True))
    if item[0] != kind:
        return f"stored kind {kind!r} differs from the entry's {item[0]!r}"
    prefix = "decision" if kind == "decision" else "evidence"
    row_id = r[f"{prefix}_id"]
    if row_id is None:
        return f"the {prefix} row this entry records is gone"
    differs = [
        name
        for name, value in zip(("payload", "signature", "key_id"), item[1:], strict=True)
        if r[f"{prefix}__{name}"] != value
    ]
    if differs:
        return f"{prefix} {row_id} differs from its ledger entry in {', '.join(differs)}"
    if kind == "decision":
        mismatched = decision_row_mismatches(
            {column: r[f"decision__{column}"] for column, _ in DECISION_ROW_COLUMNS}, facts
        )
    else:
        columns = (
            ("checker", r["evidence__checker_name"], facts["checker"]),
            ("version", r["evidence__checker_version"], facts["version"]),
            ("verdict", r["evidence__verdict"], facts["verdict"]),
            ("reason", r["evidence__reason"], facts["reason"]),
        )
        mismatched = [name for name, stored, signed in columns if stored != signed]
    if mismatched:
        return f"{prefix} {row_id} differs from its signed bytes in {', '.join(mismatched)}"
    return None


# Where a row holds the payload, signature and key id its entry records, by kind.
_ROW_ENTRY_COLUMNS = {
    kind: tuple(LEDGER_ROW_FIELDS.index(f"{kind}__{name}") for name in ENTRY_KEYS[1:])
    for kind in merkle.ENTRY_KINDS
}


def _row_entry(kind: str, row: tuple, text: str) -> tuple[tuple[str, str, str, str], bytes] | None:
    """The entry as the row's own columns encode it, if the stored entry is exactly that.

    None otherwise (a changed row, a non-canonical entry, a missing row): the
    caller then parses the stored entry to say what differs.
    """
    columns = _ROW_ENTRY_COLUMNS.get(kind)
    if columns is None:
        return None
    item = (kind, *(row[i] for i in columns))
    try:
        entry = merkle.entry_bytes(*item)
        if entry != text.encode():
            return None
    except (ValueError, TypeError, UnicodeError):
        return None
    return item, entry


def check_ledger_rows(
    batch: list[tuple[str, tuple]], keys: Mapping[str, bytes]
) -> list[tuple[Checked, str | None]]:
    """For each ``(kind, row)``: the entry's own check, then how the row betrays it (if it does).

    The second value is checked only after the entry's position and leaf, so
    it is returned separately.
    """
    results = []
    for kind, row in batch:
        text = row[0]
        entry = _row_entry(kind, row, text)
        if entry is not None:
            # The stored entry is byte for byte the encoding of the row's columns: it is
            # canonical and says what the row says, so it needs no parsing.
            item, entry_bytes = entry
            checked, facts = check_entry(*item, keys, entry=entry_bytes)
            problem = None if checked.problem else _row_problem(kind, row, item, facts)
            results.append((checked, problem))
            continue
        item = _entry_item(text)
        if item is None:
            results.append(
                (Checked(None, "stored entry is not {kind, payload, signature, key_id}"), None)
            )
            continue
        checked, facts = check_entry(*item, keys)
        if checked.problem:
            results.append((checked, None))
            continue
        if merkle.leaf_hash(text.encode()) != checked.leaf:
            results.append((checked, "stored entry is not in canonical form"))
            continue
        results.append((checked, _row_problem(kind, row, item, facts)))
    return results
