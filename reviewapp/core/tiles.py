"""C2SP tlog-tiles: the names of a log's tiles and the bytes of an entry bundle.

A tile at level L, index N holds the hashes of tree level 8·L, indices
N·256 … N·256+W−1 (W = 256 for a full tile, 1–255 for a partial one); an
entry bundle holds the level-0 tile's entries, each prefixed by its length as
a big-endian uint16. Paths are parsed strictly — one spelling per tile — so a
cache never holds the same tile under two names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

WIDTH = 256  # hashes in a full tile
HEIGHT = 8  # tree levels a tile spans: 256 = 2**8
MAX_LEVEL = 63
MAX_ENTRY_BYTES = 0xFFFF  # a bundle's uint16 length prefix
# Indices stay within a signed 64-bit column: a larger one names no tile of any tree.
MAX_INDEX = 2**62 // WIDTH

# <L> or "entries", then <N> as 3-digit groups ("x" on all but the last), then .p/<W>.
_PATH = re.compile(
    r"(?P<level>entries|0|[1-9][0-9]?)/(?P<index>(?:x[0-9]{3}/)*[0-9]{3})(?:\.p/(?P<width>[1-9][0-9]{0,2}))?"
)


class TilePathError(ValueError):
    """A path that names no tile, with the rule it breaks."""


@dataclass(frozen=True)
class Tile:
    level: int | None  # None: an entry bundle
    index: int
    width: int

    @property
    def is_entries(self) -> bool:
        return self.level is None

    @property
    def tree_level(self) -> int:
        """The Merkle tree level of the tile's hashes (entries: their leaves, level 0)."""
        return HEIGHT * (self.level or 0)

    @property
    def first(self) -> int:
        """Index, at `tree_level`, of the tile's first hash."""
        return self.index * WIDTH


def parse_tile_path(path: str) -> Tile:
    """`path` is what follows ``tile/``: ``<L>/<N>[.p/<W>]`` or ``entries/<N>[.p/<W>]``."""
    match = _PATH.fullmatch(path)
    if match is None:
        raise TilePathError(
            "a tile is tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>]: L is 0-63, N is written "
            "in 3-digit groups with an x before all but the last (1234067 is x001/x234/067), "
            "W is 1-255"
        )
    level = None if match["level"] == "entries" else int(match["level"])
    if level is not None and level > MAX_LEVEL:
        raise TilePathError(f"level {level} is above {MAX_LEVEL}")
    # Leading zero groups would name the same tile twice: x000/001 is 001.
    if match["index"].startswith("x000/"):
        raise TilePathError("the index has a leading x000 group; write it without")
    digits = match["index"].replace("x", "").replace("/", "").lstrip("0")
    # Counted first: int() refuses a string of thousands of digits.
    if len(digits) > len(str(MAX_INDEX)) or int(digits or "0") > MAX_INDEX:
        shown = digits if len(digits) <= 20 else f"{digits[:20]}… ({len(digits)} digits)"
        raise TilePathError(f"index {shown} is beyond any tree this log can hold")
    index = int(digits or "0")
    if match["width"] is None:
        return Tile(level, index, WIDTH)
    width = int(match["width"])
    if width >= WIDTH:
        raise TilePathError(f"a partial tile is 1-255 wide, not {width}; omit .p/ for a full one")
    return Tile(level, index, width)


def entry_bundle(entries: list[bytes]) -> bytes:
    """Entries as one bundle; raises ValueError for an entry longer than a uint16 can say."""
    out = bytearray()
    for position, entry in enumerate(entries):
        if len(entry) > MAX_ENTRY_BYTES:
            raise ValueError(
                f"entry {position} of the bundle is {len(entry):,} bytes; a tlog-tiles bundle "
                f"carries at most {MAX_ENTRY_BYTES:,}"
            )
        out += len(entry).to_bytes(2, "big") + entry
    return bytes(out)
