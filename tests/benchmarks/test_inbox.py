"""benchmarks/inbox.py at a tiny size: its bulk load writes rows the pages read, whatever
columns the models have gained, and the pages cost the same queries at 10 rows and more."""

import pytest
from django.db import connection

from benchmarks import inbox
from benchmarks import support as s
from reviewapp.review.models import Escalation, Proposal

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL: the bulk load is PostgreSQL's INSERT … SELECT over "
        "generate_series, as the benchmark runs it",
    ),
]


@pytest.fixture
def loader():
    s.pipeline_panel()
    loader = inbox.Loader()
    loader.users = [s.reviewer_session(f"bench-reviewer-{k}")[0] for k in range(2)]
    return loader


def test_the_bulk_load_writes_every_table_it_counts(loader):
    loaded = loader.load(proposals=60, open_escalations=12, resolved_escalations=6)
    assert loaded == {
        "proposals": 60,
        "judgements": 180,
        "claims": 360,
        "evidence": 60,
        "escalations": 18,
        "decisions": 48,
    }


def test_columns_the_load_does_not_name_take_the_models_defaults(loader):
    loader.load(proposals=20, open_escalations=5, resolved_escalations=0)
    escalation = Escalation.objects.filter(status__in=["open", "claimed"]).first()
    assert (escalation.reviews_needed, escalation.on_deadline, escalation.due_at) == (1, "", None)
    assert Proposal.objects.filter(sweeps=0).count() == 20


def test_the_pages_measured_cost_the_same_queries_at_10_rows_and_at_more(loader, client):
    client.force_login(loader.users[0])
    loader.load(proposals=10, open_escalations=10, resolved_escalations=0)
    small = {label: inbox.count_queries(client, url) for label, url in inbox.page_urls().items()}
    loader.load(proposals=200, open_escalations=40, resolved_escalations=20)
    large = {label: inbox.count_queries(client, url) for label, url in inbox.page_urls().items()}
    assert large == small
    assert {status for _, status in large.values()} == {200}


def test_a_not_null_column_the_load_does_not_name_is_refused_by_name():
    with pytest.raises(ValueError, match=r"review_proposal\.panel_id is NOT NULL and has no"):
        s.insert_select(Proposal, {"id": "1"}, "")
