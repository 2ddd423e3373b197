"""The README and the guides: a front door that fits, and links that lead somewhere."""

import re
from pathlib import Path

from tests.docs.blocks import FENCE, ROOT, pages

LINK = re.compile(r"\[[^\]]*\]\((?P<target>[^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*#*\s*$")
GUIDES = ["docs/reviewers.md", "docs/admins.md", "docs/agents.md", "docs/operators.md"]


def _prose(page: Path) -> list[str]:
    """The page's lines outside fenced code blocks."""
    lines, fence = [], None
    for line in page.read_text("utf-8").splitlines():
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening["fence"]
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        elif fence is None:
            lines.append(line)
    return lines


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for the page's headings: lower case, punctuation dropped, - for spaces."""
    found: set[str] = set()
    for line in _prose(page):
        heading = HEADING.match(line)
        if not heading:
            continue
        title = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading["title"])
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        numbered, n = slug, 0
        while numbered in found:
            n += 1
            numbered = f"{slug}-{n}"
        found.add(numbered)
    return found


def broken_links(page: Path) -> list[str]:
    broken = []
    for line in _prose(page):
        for match in LINK.finditer(line):
            target = match["target"]
            if "://" in target or target.startswith("mailto:"):
                continue
            path, _, fragment = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}: no such file")
            elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
                broken.append(f"{page.relative_to(ROOT)} -> {target}: no such heading")
    return broken


def test_every_link_in_the_readme_and_the_guides_resolves_to_a_file_and_heading():
    assert len(pages()) > 1
    assert [problem for page in pages() for problem in broken_links(page)] == []


def test_a_link_to_a_missing_heading_is_caught(tmp_path, monkeypatch):
    # The check itself, on a page of its own inside the repository's tree.
    monkeypatch.setattr("tests.docs.test_links.ROOT", tmp_path)
    (tmp_path / "a.md").write_text("# A\n\n## Some part: here\n")
    page = tmp_path / "b.md"
    page.write_text(
        "[ok](a.md#some-part-here) [bad](a.md#some-part) [gone](c.md) [self](#b)\n# B\n"
    )

    assert broken_links(page) == [
        "b.md -> a.md#some-part: no such heading",
        "b.md -> c.md: no such file",
    ]


def test_the_readme_is_a_front_door_of_at_most_200_lines():
    readme = (ROOT / "README.md").read_text("utf-8")

    assert len(readme.splitlines()) <= 200
    assert "make run" in readme and "make test" in readme


def test_the_readme_links_to_a_guide_for_each_reader_and_to_the_product_and_architecture():
    readme = (ROOT / "README.md").read_text("utf-8")

    for guide in [*GUIDES, "docs/product.md", "docs/architecture.md"]:
        assert f"]({guide})" in readme, guide
        assert (ROOT / guide).is_file()
