"""Verify reviewapp's signed records offline, with nothing but the public key(s).

    reviewapp-verify EXPORT.jsonl --public-key KEY [--public-key KEY2]
                     [--checkpoint CHECKPOINT] [--witness WITNESS.jsonl]
                     [--no-checkpoint] [--proofs PROOFS.jsonl]
                     [--witness-key VKEY [--witness-key VKEY2 ...]] [--witness-quorum K]

Two inputs are understood, told apart by their first line:

- a **ledger export** (``manage.py export_decisions``, or the decisions log's
  download): a header line, one line per ledger entry in order, and the
  server's signed checkpoints. Every entry's signature, its leaf hash, that
  each decision is in the log once, the hash chain of the decisions signed
  before v2 (``reviewapp.decision/v1``), that every evidence digest a decision signed is an
  evidence entry before it, and every checkpoint (its signature and the root
  recomputed at its size) are checked. An export with no checkpoint at all
  fails unless ``--no-checkpoint`` says that is expected; ``--witness`` adds
  every checkpoint of a witness log (``ledger-witness.jsonl``).
- **decisions** as ``GET /api/decisions`` serves them: one decision object per
  line, or the API's pages (``{"items": [...], "next_after": ...}``) one per
  line. Every signature, every hash, that none is given twice, the hash chain
  of the v1 decisions, and that the readable
  fields (outcome, basis, rationale, decided_by, proposal, and a reviewer's
  claims, tags and wrong_reason) say what the signed bytes say. With
  ``--checkpoint``, each decision must also come with an inclusion proof
  (``--proofs``: JSONL of ``GET /api/ledger/proof/{entry}`` answers) that
  verifies against that checkpoint.

``--checkpoint`` is a signed checkpoint (the note text, or the JSON of
``GET /api/ledger/checkpoint``) the records must be included in.
``--public-key`` is a base64 ed25519 public key or a file holding one; repeat
it for every key the server has used (key rotation). These are the only keys
trusted: a signature by any other key fails, naming it (the keys an export's
header lists are never used).

``--witness-key`` is a witness's verifier key in the C2SP signed-note form
(``<name>+<key id hex>+<base64(0x04 ‖ Ed25519 key)>``), or a file of them (one
per line; the server's ``REVIEWAPP_LEDGER_WITNESSES`` lines do); repeat it for
each witness. ``--witness-quorum K`` (default: all of them) is how many must
have cosigned (C2SP tlog-cosignature v1): the newest checkpoint of an export,
or every ``--checkpoint`` the decisions are proven included in, fails without
K valid cosignatures from those keys, naming the witnesses missing.

Exit status 0 when everything verifies; 1 naming the first bad line; 2 for
unusable arguments. Needs nothing of the server: only PyNaCl and rfc8785
(``pip install reviewapp-client``; ``python -m reviewapp_client.verify`` runs it too).
"""

from __future__ import annotations

import argparse
import sys

from .cosignature import WitnessPolicy
from .export import verify_file
from .files import load_public_keys, load_witness_keys
from .ledger import Failure


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="reviewapp-verify",
        description="Verify a reviewapp ledger export or decisions JSONL offline.",
    )
    parser.add_argument("file", help="ledger export (export_decisions) or decisions JSONL")
    parser.add_argument(
        "--public-key",
        action="append",
        required=True,
        metavar="KEY",
        help="a trusted base64 ed25519 public key, or a file of them (one per line, or GET "
        "/api/keys JSON); repeat for rotated keys. Only these are trusted: the keys an export's "
        "header lists are not",
    )
    parser.add_argument(
        "--checkpoint",
        action="append",
        default=[],
        metavar="FILE",
        help="a signed checkpoint (note text or the API's JSON) the records must be included in",
    )
    parser.add_argument(
        "--witness",
        action="append",
        default=[],
        metavar="FILE",
        help="a witness log (the server's ledger-witness.jsonl, or a witness's copy): every "
        "checkpoint in it must match the export's tree (ledger export input)",
    )
    parser.add_argument(
        "--no-checkpoint",
        action="store_true",
        help="accept a ledger export that carries no signed checkpoint (it then proves "
        "nothing about completeness)",
    )
    parser.add_argument(
        "--proofs", metavar="FILE", help="JSONL of /api/ledger/proof answers (decisions input)"
    )
    parser.add_argument(
        "--witness-key",
        action="append",
        default=[],
        metavar="VKEY",
        help="a witness's verifier key (<name>+<key id>+<base64(0x04 || Ed25519 key)>) or a file "
        "of them, one per line; repeat for each witness",
    )
    parser.add_argument(
        "--witness-quorum",
        type=int,
        metavar="K",
        help="how many of the --witness-key witnesses must have cosigned the checkpoint "
        "(default: all)",
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="processes checking signatures (default: auto)"
    )
    args = parser.parse_args(argv)
    try:
        keys = [key for value in args.public_key for key in load_public_keys(value)]
    except (ValueError, OSError) as exc:
        parser.error(str(exc))
    try:
        policy = _witness_policy(args.witness_key, args.witness_quorum)
    except (ValueError, OSError) as exc:
        parser.error(str(exc))
    try:
        report = verify_file(
            args.file,
            keys,
            checkpoint_files=args.checkpoint,
            witness_files=args.witness,
            proofs_file=args.proofs,
            require_checkpoint=not args.no_checkpoint,
            witness_policy=policy,
            workers=args.workers,
        )
    except Failure as failure:
        print(f"FAIL {failure}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"FAIL {exc}", file=sys.stderr)
        return 1
    except RecursionError:
        # Anything nested too deeply that a check above did not catch first.
        print(f"FAIL {args.file}: input nested too deeply to check", file=sys.stderr)
        return 1
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(report.summary())
    return 0


def _witness_policy(values: list[str], quorum: int | None) -> WitnessPolicy | None:
    keys = [key for value in values for key in load_witness_keys(value)]
    if not keys:
        if quorum is not None:
            raise ValueError("--witness-quorum needs the witnesses' keys (--witness-key)")
        return None
    quorum = len(keys) if quorum is None else quorum
    if not 1 <= quorum <= len(keys):
        raise ValueError(f"--witness-quorum {quorum}: between 1 and the {len(keys)} witness keys")
    return WitnessPolicy(tuple(keys), quorum)
