"""benchmarks/replay.py's pure parts: the seeded content cites what the provider answers with."""

from benchmarks._provider import TICKET
from benchmarks.llm_pipeline import contents
from benchmarks.replay import LLM, RECORDED


def test_the_draft_is_three_llm_lenses_none_of_them_in_the_seeded_panel():
    assert len(LLM) == 3 and not set(LLM) & set(RECORDED)


def test_every_seeded_proposal_carries_the_ticket_line_the_provider_cites():
    items = contents(5, "replay-")
    assert all(TICKET.search(item["content"]) for item in items)
    assert len({item["content"] for item in items}) == 5
