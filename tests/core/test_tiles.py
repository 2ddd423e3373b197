"""Tile paths and entry bundles, as C2SP tlog-tiles spells them."""

import pytest

from reviewapp.core.tiles import Tile, TilePathError, entry_bundle, parse_tile_path


def test_the_spec_s_example_index_parses():
    assert parse_tile_path("0/x001/x234/067") == Tile(level=0, index=1234067, width=256)


def test_a_partial_tile_has_its_width():
    assert parse_tile_path("2/000.p/1") == Tile(level=2, index=0, width=1)


def test_an_entry_bundle_is_a_tile_without_a_level():
    tile = parse_tile_path("entries/x001/000.p/7")

    assert tile.is_entries
    assert (tile.index, tile.width, tile.tree_level) == (1000, 7, 0)


def test_a_tile_s_hashes_sit_eight_tree_levels_per_tile_level():
    tile = parse_tile_path("3/005")

    assert (tile.tree_level, tile.first) == (24, 5 * 256)


@pytest.mark.parametrize("path", ["0/x000/001", "0/01", "64/000", "1/000.p/256", "x/000", ""])
def test_a_path_with_a_second_spelling_or_out_of_range_is_refused(path):
    with pytest.raises(TilePathError):
        parse_tile_path(path)


def test_an_entry_bundle_prefixes_each_entry_with_its_big_endian_length():
    assert entry_bundle([b"ab", b"", b"x" * 300]) == (
        b"\x00\x02ab" + b"\x00\x00" + b"\x01\x2c" + b"x" * 300
    )


def test_an_entry_longer_than_a_uint16_cannot_be_bundled():
    with pytest.raises(ValueError, match="65,535"):
        entry_bundle([b"x" * 65_536])
