"""The ledger as C2SP tlog-tiles: the hashes and entries of one tile, read from what appends store.

Leaf hashes and every perfect subtree are stored (level 8·L is a tile's level),
so reading a tile costs one indexed range query. A tile whose hashes do not
all exist yet is None, never a shorter tile. Served under /ledger/ by
``reviewapp.web.ledger_views``.
"""

from reviewapp.core import tiles

from .models import LedgerEntry, LedgerNode


def tile_hashes(tile: tiles.Tile) -> list[str] | None:
    """The tile's hex hashes, or None while any of them does not exist."""
    span = (tile.first, tile.first + tile.width)
    if tile.tree_level == 0:
        rows = LedgerEntry.objects.filter(leaf_index__gte=span[0], leaf_index__lt=span[1])
        hashes = list(rows.order_by("leaf_index").values_list("leaf_hash", flat=True))
    else:
        rows = LedgerNode.objects.filter(
            level=tile.tree_level, node_index__gte=span[0], node_index__lt=span[1]
        )
        hashes = list(rows.order_by("node_index").values_list("hash", flat=True))
    return hashes if len(hashes) == tile.width else None


def tile_entries(tile: tiles.Tile) -> list[bytes] | None:
    """The entries of an entry bundle, or None while any of them is not sequenced."""
    rows = LedgerEntry.objects.filter(
        leaf_index__gte=tile.first, leaf_index__lt=tile.first + tile.width
    )
    entries = [
        text.encode() for text in rows.order_by("leaf_index").values_list("entry", flat=True)
    ]
    return entries if len(entries) == tile.width else None
