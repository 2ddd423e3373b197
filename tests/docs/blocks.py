"""The fenced code blocks of the README and the guides, as a reader would run them.

A shell block (`sh`, `bash`, `shell`, `console`) runs unless the line before its
fence says why it cannot: `<!-- not run: needs a Docker engine -->`. A `console`
block is commands after `$ ` (a line ending in `\\` goes on) with the output each
prints below it; an `sh` block is one script.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELL = {"sh", "bash", "shell", "console"}
# Every fence names its language, so a shell block cannot pass as something else.
LANGUAGES = SHELL | {"json", "python", "text", "toml", "yaml", "diff"}
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>[^`]*)$")
NOT_RUN = re.compile(r"^\s*<!--\s*not run:\s*(?P<reason>\S.*?)\s*-->\s*$")
MARKER = re.compile(r"<!--\s*not run\b")


def pages() -> list[Path]:
    """The README first, then every guide under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclass
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    language: str
    text: str
    not_run: str | None = None  # the reason, when the block is marked

    @property
    def where(self) -> str:
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{page}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.language in SHELL and self.not_run is None


def blocks(page: Path) -> list[Block]:
    lines = page.read_text("utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        body, end = [], index + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            body.append(lines[end][indent:] if lines[end][:indent].isspace() else lines[end])
            end += 1
        before = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        marked = NOT_RUN.match(before)
        found.append(
            Block(
                page=page,
                line=index + 1,
                language=opening["info"].strip().split(" ")[0],
                text="\n".join(body) + "\n",
                not_run=marked["reason"] if marked else None,
            )
        )
        index = end + 1
    return found


def markers_not_before_a_shell_block(page: Path) -> list[int]:
    """Lines of `not run` markers that mark no shell block (a stale or misplaced one)."""
    marked = {b.line for b in blocks(page) if b.not_run is not None and b.language in SHELL}
    lines = page.read_text("utf-8").splitlines()
    stray = []
    for number, line in enumerate(lines, 1):
        if not MARKER.search(line):
            continue
        following = next((n for n in range(number, len(lines)) if lines[n].strip()), None)
        if following is None or following + 1 not in marked or not NOT_RUN.match(line):
            stray.append(number)
    return stray


@dataclass
class Command:
    text: str  # what follows `$ `, continuation lines included
    output: list[str] = field(default_factory=list)  # as the block shows it


def console_commands(block: Block) -> list[Command]:
    commands: list[Command] = []
    continuing = False
    for line in block.text.splitlines():
        if continuing:
            commands[-1].text += "\n" + line
        elif line.startswith("$ "):
            commands.append(Command(line[2:]))
        elif commands and line.strip():
            commands[-1].output.append(line)
        continuing = bool(commands) and line.endswith("\\") and not commands[-1].output
    return commands


# What differs from one run to the next in a shown output line: keys, hashes and
# signatures (long base64 or hex runs with a digit), and numbers. `…` stands for
# anything. The rest of the line must be printed exactly.
_VARYING = re.compile(
    r"(?P<any>…)"
    r"|(?P<blob>(?=[A-Za-z+/]*\d)[A-Za-z0-9+/]{20,}={0,2})"
    r"|(?P<hex>\b(?=[a-f]*\d)[0-9a-f]{8,}\b)"
    r"|(?P<number>\d+(?:\.\d+)?)"
)
_REPLACEMENT = {
    "any": ".*",
    "blob": r"[A-Za-z0-9+/]+={0,2}",
    "hex": "[0-9a-f]+",
    "number": r"\d+(?:\.\d+)?",
}


def output_pattern(shown: str) -> re.Pattern:
    parts, last = [], 0
    for match in _VARYING.finditer(shown):
        parts.append(re.escape(shown[last : match.start()]))
        parts.append(_REPLACEMENT[match.lastgroup])
        last = match.end()
    parts.append(re.escape(shown[last:]))
    return re.compile("".join(parts).rstrip())


def unmatched_output(shown: list[str], printed: str) -> list[str]:
    """The shown lines that no printed line matches (whole, trailing blanks aside)."""
    actual = [line.rstrip() for line in printed.splitlines()]
    return [
        line
        for line in shown
        if not any(output_pattern(line.rstrip()).fullmatch(a) for a in actual)
    ]
