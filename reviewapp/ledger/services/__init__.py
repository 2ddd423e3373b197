"""Appending to the ledger, checkpointing it, and answering proofs from stored subtrees.

The tree is RFC 6962 over ``merkle.entry_bytes`` of each signed record. Every
perfect subtree is stored once (``LedgerNode``; leaves are
``LedgerEntry.leaf_hash``), so a root, an inclusion proof or a consistency
proof for any size costs O(log n) rows, never a scan.

Appending and integrating are two steps, as in Tessera-style logs. An append
only sequences: under the ledger's lock it gives each entry the next leaf
index and stores it, and nothing else (its leaf hash is computed before the
lock). The checkpoint task then integrates every entry appended since the
last checkpoint into the tree in one batch (their subtree hashes), and signs
the new size. So proofs are answered up to the latest checkpoint (the
*integrated* size), within one checkpoint interval of an append.
"""

from .append import (
    DecisionAppend,
    NewEntry,
    check_foreign_keys_now,
    decision_entry,
    evidence_entry,
    ledger_append,
    ledger_append_decision,
    ledger_prepare_decision,
    lock_chain_head_and_ledger,
    tree_size,
)
from .checkpoints import (
    DEFAULT_ORIGIN,
    checkpoint_create,
    checkpoint_json,
    checkpoint_note_with_cosignatures,
    latest_checkpoint,
    ledger_origin,
)
from .export import EXPORT_FORMAT, MAX_PAGE, entry_json, export_lines
from .status import DecisionLedgerStatus, decision_ledger_status, ledger_position_for_decision
from .tree import consistency_proof, inclusion_proof, integrated_size, root_at

__all__ = [
    "DEFAULT_ORIGIN",
    "EXPORT_FORMAT",
    "MAX_PAGE",
    "DecisionAppend",
    "DecisionLedgerStatus",
    "NewEntry",
    "check_foreign_keys_now",
    "checkpoint_create",
    "checkpoint_json",
    "checkpoint_note_with_cosignatures",
    "consistency_proof",
    "decision_entry",
    "decision_ledger_status",
    "entry_json",
    "evidence_entry",
    "export_lines",
    "inclusion_proof",
    "integrated_size",
    "latest_checkpoint",
    "ledger_append",
    "ledger_append_decision",
    "ledger_origin",
    "ledger_position_for_decision",
    "ledger_prepare_decision",
    "lock_chain_head_and_ledger",
    "root_at",
    "tree_size",
]
