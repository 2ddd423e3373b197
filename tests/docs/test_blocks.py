"""How the docs' shell blocks are found, run and checked (tests/docs/blocks.py, shell.py)."""

import sys
from pathlib import Path

import pytest

from tests.docs.blocks import (
    LANGUAGES,
    SHELL,
    Block,
    blocks,
    console_commands,
    markers_not_before_a_shell_block,
    output_pattern,
    pages,
    unmatched_output,
)
from tests.docs.shell import Instance, Session, reader_environment
from tests.docs.test_shell_blocks import run_page

PAGE = """\
# A page

```sh
export GREETING=hello
```

- A step in a list:

  ```console
  $ echo "$GREETING, \\
  world"
  hello, world
  ```

<!-- not run: needs a Docker engine -->
```sh
docker compose up
```

```json
{"not": "shell"}
```
"""


def test_blocks_are_found_with_their_language_line_and_marker(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(PAGE)

    found = blocks(page)

    assert [(b.line, b.language, b.runs) for b in found] == [
        (3, "sh", True), (9, "console", True), (16, "sh", False), (20, "json", False),
    ]
    assert found[1].text == '$ echo "$GREETING, \\\nworld"\nhello, world\n'
    assert found[2].not_run == "needs a Docker engine"


def test_a_console_block_is_commands_with_the_output_shown_under_each():
    block = Block(
        page=pages()[0], line=1, language="console",
        text="$ first \\\n  --flag\nout 1\nout 2\n$ second\n",
    )

    commands = console_commands(block)

    assert [(c.text, c.output) for c in commands] == [
        ("first \\\n  --flag", ["out 1", "out 2"]), ("second", []),
    ]


@pytest.mark.parametrize(
    ("shown", "printed", "matches"),
    [
        ("29 decisions verified: signatures and chain intact.",
         "31 decisions verified: signatures and chain intact.", True),
        ("29 decisions verified: signatures and chain intact.",
         "31 decisions verified: signatures intact.", False),
        ("6nplxVzR6B7lGXWU1loFXCSD0c5iMR0U9iLK07Za0tI= ed25519:40ab3fbb1d98e55b",
         "qQJDrL1P5a3CP7+jqWwFMIYsObnp+r6ZDf+9Qg38Ixw= ed25519:36623bbaf191d141", True),
        ("FAIL line 32 (entry 30, decision …", "FAIL line 3 (entry 1, decision for proposal 1)",
         True),
        ("FAIL line 32 (entry 30, decision …", "OK: 97 ledger entries", False),
        ('{"id": 50, "status": …, "url": "/api/proposals/50"}',
         '{"id": 51, "status": "evaluating", "url": "/api/proposals/51"}', True),
    ],
)
def test_a_shown_line_stands_for_any_keys_hashes_and_numbers_but_not_other_words(
    shown, printed, matches
):
    assert bool(output_pattern(shown).fullmatch(printed)) is matches


def test_every_shown_line_must_be_printed_somewhere():
    printed = "warning: first\nwrote 99 lines to ledger.jsonl\n"

    assert unmatched_output(["wrote 12 lines to ledger.jsonl"], printed) == []
    assert unmatched_output(["wrote 12 lines to keys.txt"], printed) == [
        "wrote 12 lines to keys.txt"
    ]


def test_variables_and_the_directory_carry_from_one_piece_to_the_next(tmp_path):
    session = Session(tmp_path, reader_environment(tmp_path / "var"))

    session.run('TOKEN=$(echo rva_x)\nmkdir -p sub && cd sub\nexport MODE="a b"', strict=True)
    status, printed = session.run('echo "$TOKEN|$MODE|${PWD##*/}"', strict=True)

    assert (status, printed) == (0, "rva_x|a b|sub\n")


def test_a_strict_piece_stops_at_its_first_failing_command(tmp_path):
    session = Session(tmp_path, reader_environment(tmp_path / "var"))

    status, printed = session.run("false\necho after", strict=True)

    assert status == 1 and "after" not in printed


def test_a_reader_shell_has_no_test_settings_and_no_activated_virtualenv(tmp_path, monkeypatch):
    monkeypatch.setenv("SECRET_KEY", "from-the-test-run")
    session = Session(tmp_path, reader_environment(tmp_path / "var"))

    _, printed = session.run('echo "${SECRET_KEY:-none}"; echo "$PATH"', strict=False)

    secret, path = printed.splitlines()
    assert secret == "none"
    assert str(Path(sys.prefix) / "bin") not in path.split(":")


def _page(tmp_path, text):
    page = tmp_path / "page.md"
    page.write_text(text)
    instance = Instance(port=1, environment=reader_environment(tmp_path / "var"), output=[])
    return run_page(page, instance, tmp_path / "run")


def test_a_page_runs_every_block_in_order_in_one_session(tmp_path):
    run = _page(tmp_path, "```sh\nN=3\n```\n\n```console\n$ echo $((N * 2))\n6\n```\n")

    assert run.failure is None
    assert [b.line for b in run.ran] == [1, 5]


@pytest.mark.parametrize(
    ("text", "failure"),
    [
        ("```sh\ntrue\nfalse\n```\n", "the block exited 1"),
        ("```console\n$ echo one\ntwo\n```\n", "printed no line like 'two'"),
        ("```console\n$ false\n```\n", "`false` exited 1, not 0"),
        ("```console\n$ true\n$ echo $?\n1\n```\n", "`true` exited 0, not 1"),
    ],
)
def test_a_page_stops_at_a_block_that_does_not_do_what_it_shows(tmp_path, text, failure):
    run = _page(tmp_path, text)

    assert failure in run.failure
    assert run.ran == []


def test_a_failure_the_block_shows_with_its_exit_status_is_what_it_says(tmp_path):
    run = _page(tmp_path, "```console\n$ sh -c 'echo FAIL; exit 3'\nFAIL\n$ echo $?\n3\n```\n")

    assert run.failure is None


def test_every_fence_of_the_readme_and_the_guides_names_its_language():
    unnamed = [(b.where, b.language) for p in pages() for b in blocks(p)
               if b.language not in LANGUAGES]
    assert unnamed == []


def test_every_not_run_marker_gives_a_reason_and_marks_a_shell_block():
    assert {str(p.name): markers_not_before_a_shell_block(p) for p in pages()} == {
        str(p.name): [] for p in pages()
    }
    marked = [b for p in pages() for b in blocks(p) if b.not_run is not None]
    assert marked and all(b.language in SHELL and b.not_run.strip() for b in marked)


def test_a_stray_marker_is_caught(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("<!-- not run: no reason to -->\nprose\n\n<!-- not run -->\n```sh\nx\n```\n")

    assert markers_not_before_a_shell_block(page) == [1, 4]
