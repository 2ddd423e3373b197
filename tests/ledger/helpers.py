import base64
import json
import subprocess
import sys

from nacl.signing import SigningKey

from reviewapp.core import merkle
from reviewapp.ledger.models import LedgerCosignature, LedgerEntry, LedgerNode
from reviewapp.ledger.services import checkpoint_create, export_lines
from reviewapp.review.keys import server_signer
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
    return LedgerEntry.objects.get(decision=decision)


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
