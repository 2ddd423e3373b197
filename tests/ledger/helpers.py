import base64
import json
import subprocess
import sys

from nacl.signing import SigningKey

from reviewapp.core import merkle
from reviewapp.ledger.keys import server_signer
from reviewapp.ledger.models import LedgerCosignature, LedgerEntry, LedgerNode
from reviewapp.ledger.services import checkpoint_create, export_lines
from tests.factories import CheckerFactory, LensFactory, PanelFactory, recorded
from tests.review.helpers import evaluate_in_process, judgement, submit
from tests.support import c2sp_cosignature as spec


def decide(count: int = 3, *, checker: bool = True):
    """`count` proposals decided by the system: each adds an evidence entry, then a decision."""
    proposals = []
    for i in range(count):
        content = f"Answer {i}: the migration is reversible and quick."
        lens = LensFactory()
        recorded(lens, content, judgement("pass", "the migration is reversible"))
        panel = PanelFactory(lenses=[lens], need=1, checkers=[CheckerFactory()] if checker else [])
        proposals.append(evaluate_in_process(submit(panel, content)))
    return proposals


def run_offline_verifier(*args, env=None, cwd=None, timeout=120) -> subprocess.CompletedProcess:
    """`reviewapp-verify ARGS` in a fresh process (the client package's source, see conftest)."""
    return subprocess.run(
        [sys.executable, "-m", "reviewapp_client.verify", *(str(a) for a in args)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def public_key_b64() -> str:
    return server_signer().public_key_b64


def entry_of(decision) -> LedgerEntry:
    return LedgerEntry.objects.get(decision_id=decision.pk)


def export(tmp_path, name="export.jsonl", *, checkpoint=True, after=None):
    if checkpoint:
        checkpoint_create(only_if_grown=True)
    path = tmp_path / name
    path.write_text("".join(export_lines(after=after)), encoding="utf-8")
    return path


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write_jsonl(path, objects):
    path.write_text(
        "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects), encoding="utf-8"
    )
    return path


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def rebuild_tree() -> None:
    """Recompute every stored subtree hash from the leaves, as a careful attacker would
    (call inside ``tampering()``)."""
    leaves = [
        bytes.fromhex(h)
        for h in LedgerEntry.objects.order_by("leaf_index").values_list("leaf_hash", flat=True)
    ]
    LedgerNode.objects.all().delete()
    LedgerNode.objects.bulk_create(
        LedgerNode(level=level, node_index=index, hash=h.hex())
        for (level, index), h in merkle.MemoryTree(leaves).nodes.items()
        if level
    )


TIMESTAMP = 1767225600


class Witness:
    """A C2SP witness whose cosignatures are made from the specification's text
    (tests/support/c2sp_cosignature.py) and stored as the server stores a witness's answer."""

    def __init__(self, name: str, seed: bytes):
        self.name, self.seed = name, seed
        self.vkey = spec.vkey(name, bytes(SigningKey(seed).verify_key))

    def cosign(self, checkpoint, *, corrupt: bool = False) -> None:
        """Store this witness's cosignature of ``checkpoint`` (``corrupt``: its signature's last
        byte flipped, under this witness's name and key id)."""
        line = spec.cosign(self.seed, self.name, spec.note_body(checkpoint.note), TIMESTAMP)
        if corrupt:
            prefix, blob = line.rsplit(" ", 1)
            raw = bytearray(base64.b64decode(blob))
            raw[-1] ^= 1
            line = f"{prefix} {base64.b64encode(bytes(raw)).decode()}"
        LedgerCosignature.objects.create(
            checkpoint=checkpoint,
            witness=self.name,
            key_id=self.vkey.split("+")[1],
            timestamp=TIMESTAMP,
            line=line,
        )


def decide_chained_v1(count: int = 3):
    """`count` decisions as the server signed them before v2: each a
    ``reviewapp.decision/v1`` payload chained on the one before (``prev_hash``), in the
    ledger in that order. The history a server upgraded to v2 holds."""
    from django.utils import timezone

    from reviewapp.core.signing import sha256_hex
    from reviewapp.ledger.services import ledger_append, ledger_sequence, signed_entry
    from reviewapp.review.models import Decision
    from reviewapp.review.services.decisions import GENESIS_HASH, decision_payload
    from tests.review.helpers import submit

    signer = server_signer()
    previous = (
        Decision.objects.filter(prev_hash__isnull=False)
        .order_by("-id")
        .values_list("hash", flat=True)
    ).first() or GENESIS_HASH
    decisions = []
    for i in range(count):
        panel = PanelFactory(lenses=[LensFactory()], need=1)
        proposal = submit(panel, f"Answer v1-{i}: decided before v2.")
        payload = decision_payload(
            proposal=proposal,
            outcome="approved",
            basis="system",
            rationale="All checkers passed and the panel reached pass.",
            decided_by="system",
            escalation=None,
            decided_at=timezone.now().isoformat(),
            evidence=[],
            lenses=[],
        )
        payload.update(type="reviewapp.decision/v1", prev_hash=previous)
        signed = signer.sign(payload)
        decision = Decision.objects.create(
            proposal=proposal,
            outcome="approved",
            basis="system",
            decided_by_name="system",
            rationale=payload["rationale"],
            payload=signed.payload_bytes.decode(),
            signature=signed.signature_b64,
            key_id=signed.key_id,
            prev_hash=previous,
            hash=sha256_hex(signed.payload_bytes),
        )
        ledger_append([signed_entry("decision", decision)])
        ledger_sequence()
        previous = decision.hash
        decisions.append(decision)
    return decisions
