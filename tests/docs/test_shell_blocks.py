"""Every shell block of the README and the guides runs as written, beside one `make run`.

Each page's blocks run in order in one session (tests/docs/shell.py says how);
a `console` block's commands must exit 0 (or the status its `echo $?` shows)
and print every output line it shows (keys, hashes and numbers aside). A block
that cannot run says why in a `<!-- not run: … -->` comment, and every other
shell block must have run.
"""

import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.docs.blocks import Block, blocks, console_commands, pages, unmatched_output
from tests.docs.shell import Instance, Session, start_instance

# One instance for the module: keep its tests on one xdist worker (tests/docs/conftest.py).
pytestmark = [pytest.mark.worker, pytest.mark.xdist_group("docs")]
INSTANCE_COMMAND = "make run"


def is_the_instance(block: Block) -> bool:
    lines = [line for line in block.text.splitlines() if not line.lstrip().startswith("#")]
    return block.language in ("sh", "bash", "shell") and "\n".join(lines).strip() == "make run"


def readme_instance_block() -> Block:
    return next(b for b in blocks(pages()[0]) if b.runs and is_the_instance(b))


@pytest.fixture(scope="module")
def instance(tmp_path_factory):
    command = readme_instance_block().text
    yield from start_instance(tmp_path_factory.mktemp("docs-instance"), command)


@dataclass
class PageRun:
    session: Session
    ran: list[Block] = field(default_factory=list)
    failure: str | None = None


def _run_console(block: Block, session: Session, instance: Instance) -> str | None:
    commands = console_commands(block)
    status = 0
    for index, command in enumerate(commands):
        if command.text.strip() == "echo $?":
            if command.output != [str(status)]:
                return f"{block.where}: `echo $?` shows {command.output}, the status was {status}"
            continue
        following = commands[index + 1] if index + 1 < len(commands) else None
        expected = 0
        if following is not None and following.text.strip() == "echo $?":
            expected = int(following.output[0])
        status, printed = session.run(instance.address(command.text), strict=False)
        if status != expected:
            return (
                f"{block.where}: `{command.text}` exited {status}, not {expected}:\n{printed}"
            )
        missing = unmatched_output(command.output, printed)
        if missing:
            return (
                f"{block.where}: `{command.text}` printed no line like {missing[0]!r}; "
                f"it printed:\n{printed}"
            )
    return None


def run_page(page: Path, instance: Instance, directory: Path) -> PageRun:
    run = PageRun(Session(directory, instance.environment))
    for block in blocks(page):
        if not block.runs:
            continue
        if is_the_instance(block):
            # The instance is this very command, started by the `instance` fixture.
            assert block.text == readme_instance_block().text
        elif block.language == "console":
            run.failure = _run_console(block, run.session, instance)
        else:
            status, printed = run.session.run(instance.address(block.text), strict=True)
            if status:
                run.failure = f"{block.where}: the block exited {status}:\n{printed}"
        if run.failure:
            return run
        run.ran.append(block)
    return run


@pytest.fixture(scope="module")
def page_runs(instance, tmp_path_factory):
    """Each page run once, in the order a reader meets them (README first: its proposal
    ids are the first after the demo's), whatever order the tests ask in."""
    done: dict[Path, PageRun] = {}

    def run(page: Path) -> PageRun:
        every = pages()
        for earlier in every[: every.index(page) + 1]:
            if earlier not in done:
                directory = tmp_path_factory.mktemp(f"docs-{earlier.stem.lower()}")
                done[earlier] = run_page(earlier, instance, directory)
        return done[page]

    return run


PAGES_WITH_SHELL_BLOCKS = [p for p in pages() if any(b.runs for b in blocks(p))]


@pytest.mark.parametrize("page", PAGES_WITH_SHELL_BLOCKS, ids=lambda p: p.name)
def test_every_shell_block_runs_as_written(page, page_runs):
    run = page_runs(page)

    assert run.failure is None, run.failure
    assert [b.line for b in run.ran] == [b.line for b in blocks(page) if b.runs]


def test_the_readmes_first_submission_is_approved_by_the_demo_panel_it_names(
    page_runs, instance
):
    run = page_runs(pages()[0])
    assert run.failure is None, run.failure
    token = run.session.variable("TOKEN")
    assert token.startswith("rva_")

    # Waits for the worker's verdict, which the README's reader reads a moment later.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        proposal = httpx.get(
            f"http://127.0.0.1:{instance.port}/api/proposals/49",
            headers={"Authorization": f"Bearer {token}"},
        ).json()
        if proposal["status"] in ("decided", "escalated"):
            break
        time.sleep(0.2)
    assert proposal["content"] == "You can request a refund from your order page."
    assert [j["lens"] for j in proposal["judgements"]] == ["house-style-mandate"], proposal
    assert proposal["decision"]["outcome"] == "approved", proposal
