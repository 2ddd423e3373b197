"""Appending to the ledger, checkpointing it, and answering proofs from stored subtrees.

The tree is RFC 6962 over ``merkle.entry_bytes`` of each signed record. Every
perfect subtree is stored once (``LedgerNode``; leaves are
``LedgerEntry.leaf_hash``), so a root, an inclusion proof or a consistency
proof for any size costs O(log n) rows, never a scan.

Appending, sequencing and integrating are three steps, as in Tessera-style
logs. An append stores its entries with their leaf hashes and no index, in
the writer's transaction, under no lock. The sequencer then gives committed
entries the next contiguous indexes, a batch per short transaction
(``sequence``), within milliseconds of their commit. The checkpoint task
integrates every entry sequenced since the last checkpoint into the tree in
one batch (their subtree hashes), and signs the new size. So proofs are
answered up to the latest checkpoint (the *integrated* size), within one
checkpoint interval of an append.
"""

from .append import (
    NewEntry,
    RecordAppend,
    ledger_append,
    ledger_append_record,
    ledger_prepare_record,
    signed_entry,
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
from .sequence import (
    SequencerBacklog,
    ledger_gap_problem,
    ledger_sequence,
    ledger_sequence_batch,
    sequence_after_commit,
    sequencer_backlog,
)
from .tree import consistency_proof, inclusion_proof, integrated_size, root_at

__all__ = [
    "DEFAULT_ORIGIN",
    "EXPORT_FORMAT",
    "MAX_PAGE",
    "NewEntry",
    "RecordAppend",
    "SequencerBacklog",
    "checkpoint_create",
    "checkpoint_json",
    "checkpoint_note_with_cosignatures",
    "consistency_proof",
    "entry_json",
    "export_lines",
    "inclusion_proof",
    "integrated_size",
    "latest_checkpoint",
    "ledger_append",
    "ledger_append_record",
    "ledger_gap_problem",
    "ledger_origin",
    "ledger_prepare_record",
    "ledger_sequence",
    "ledger_sequence_batch",
    "root_at",
    "sequence_after_commit",
    "sequencer_backlog",
    "signed_entry",
    "tree_size",
]
