"""A tlog-tiles client written from C2SP's text alone, sharing no code with the server.

It fetches what the spec says a tree of a given size is served as, checks that
each tile at level ≥ 1 holds the Merkle Tree Hashes of the full tiles below,
and rebuilds the leaves, so the tests can compare the tree it sees with the
checkpoint and with the API's proofs (through tests.support.rfc6962).
"""

import base64
from collections.abc import Callable

from tests.support.rfc6962 import H

TILE_WIDTH = 256


def index_path(n: int) -> str:
    """`<N>`: zero-padded 3-digit elements, all but the last starting with x."""
    parts = [f"{n % 1000:03d}"]
    n //= 1000
    while n:
        parts.append(f"x{n % 1000:03d}")
        n //= 1000
    return "/".join(reversed(parts))


def tile_url(level, n: int, width: int) -> str:
    suffix = "" if width == TILE_WIDTH else f".p/{width}"
    return f"/ledger/tile/{level}/{index_path(n)}{suffix}"


def checkpoint_size_and_root(note: str) -> tuple[int, bytes]:
    origin, size, root = note.split("\n")[:3]
    return int(size), base64.b64decode(root)


def subtree_root(hashes: list[bytes]) -> bytes:
    """MTH of a perfect subtree whose leaves' hashes (not data) are given."""
    while len(hashes) > 1:
        hashes = [H(b"\x01" + a + b) for a, b in zip(hashes[::2], hashes[1::2], strict=True)]
    return hashes[0]


class TileReader:
    def __init__(self, fetch: Callable[[str], bytes]):
        self.fetch = fetch
        self.fetched: list[str] = []

    def tile(self, level, n: int, width: int) -> bytes:
        url = tile_url(level, n, width)
        self.fetched.append(url)
        body = self.fetch(url)
        if level != "entries":
            assert len(body) == 32 * width, f"{url}: {len(body)} bytes for {width} hashes"
        return body

    def leaf_hashes(self, size: int) -> list[bytes]:
        """Every leaf hash of a tree of `size`; tiles above level 0 checked against those below."""
        levels: list[list[bytes]] = []  # the hashes each tile level holds
        level, count = 0, size
        while count:
            full, width = divmod(count, TILE_WIDTH)
            hashes = []
            for n in range(full):
                hashes += _split(self.tile(level, n, TILE_WIDTH))
            if width:
                hashes += _split(self.tile(level, full, width))
            levels.append(hashes)
            level, count = level + 1, full
        for level, (below, above) in enumerate(zip(levels, levels[1:], strict=False), start=1):
            for n, h in enumerate(above):
                assert h == subtree_root(below[n * TILE_WIDTH : (n + 1) * TILE_WIDTH]), (
                    f"level-{level} hash {n} is not the root of the full tile below it"
                )
        return levels[0] if levels else []

    def entries(self, n: int, width: int) -> list[bytes]:
        body, entries, at = self.tile("entries", n, width), [], 0
        while at < len(body):
            length = int.from_bytes(body[at : at + 2], "big")
            entries.append(body[at + 2 : at + 2 + length])
            at += 2 + length
        assert at == len(body), "the bundle ends mid-entry"
        return entries


def _split(body: bytes) -> list[bytes]:
    return [body[i : i + 32] for i in range(0, len(body), 32)]


def _k(n: int) -> int:
    """RFC 6962's split: the largest power of two smaller than n."""
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def root_from_leaf_hashes(leaves: list[bytes]) -> bytes:
    """RFC 6962 MTH, from leaf hashes rather than data."""
    if not leaves:
        return H(b"")
    if len(leaves) == 1:
        return leaves[0]
    k = _k(len(leaves))
    return H(b"\x01" + root_from_leaf_hashes(leaves[:k]) + root_from_leaf_hashes(leaves[k:]))


def path_from_leaf_hashes(m: int, leaves: list[bytes]) -> list[bytes]:
    """RFC 6962 PATH(m, D), from leaf hashes rather than data."""
    if len(leaves) <= 1:
        return []
    k = _k(len(leaves))
    if m < k:
        return path_from_leaf_hashes(m, leaves[:k]) + [root_from_leaf_hashes(leaves[k:])]
    return path_from_leaf_hashes(m - k, leaves[k:]) + [root_from_leaf_hashes(leaves[:k])]
