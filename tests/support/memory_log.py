"""A transparency log in memory with its own origin and key: the log side of the witness tests."""

from nacl.signing import SigningKey

from reviewapp.core import cosignature, merkle


class MemoryLog:
    """``history`` names what its leaves hold: two logs of one origin with different
    histories are a fork."""

    def __init__(self, origin: str, size: int = 0, history: str = "main"):
        self.origin = origin
        self.history = history
        self.key = SigningKey.generate()
        self.tree = merkle.MemoryTree()
        self.grow(size)

    @property
    def vkey(self) -> str:
        public = bytes(self.key.verify_key)
        return cosignature.VerifierKey(self.origin, cosignature.LOG_KEY_TYPE, public).text()

    def grow(self, n: int) -> None:
        for _ in range(n):
            self.tree.append(merkle.leaf_hash(f"{self.history} {self.tree.size}".encode()))

    def note(self, size: int | None = None, key: SigningKey | None = None) -> str:
        size = self.tree.size if size is None else size
        key = key or self.key
        checkpoint = merkle.Checkpoint(self.origin, size, self.tree.root(size))
        return merkle.sign_checkpoint(
            checkpoint, bytes(key.verify_key), lambda m: key.sign(m).signature
        )

    def body(self, old: int, size: int | None = None, proof=None, note=None) -> bytes:
        """An add-checkpoint request from ``old`` to ``size`` (default: the whole tree)."""
        size = self.tree.size if size is None else size
        proof = self.tree.consistency_proof(old, size) if proof is None else proof
        return cosignature.add_checkpoint_body(old, proof, note or self.note(size))
