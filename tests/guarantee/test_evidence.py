"""Labels move a pattern's standing; each change of trust is recorded and announced once."""

import json

import pytest

from reviewapp.audit.models import AuditEntry
from reviewapp.core.guarantee.configuration import configuration_key
from reviewapp.guarantee.configure import guarantee_configure
from reviewapp.guarantee.evidence import label_add
from reviewapp.guarantee.models import PatternEvidence
from reviewapp.review.models import Proposal
from reviewapp.review.services.proposals import panel_snapshot
from reviewapp.webhooks.models import Delivery
from tests.review.helpers import evaluate_in_process, submit
from tests.webhooks.helpers import api_client, subscribe

from .builders import CONTENT, MAJORITY, UNANIMOUS, evidence, guaranteed, voting_panel

pytestmark = pytest.mark.django_db

URL = "http://127.0.0.1:9/hook"  # never called: these tests read the outbox


def detail_of(panel, pattern=UNANIMOUS, would_be="approved"):
    return {
        "pattern": pattern,
        "configuration": configuration_key(panel_snapshot(panel)),
        "need": panel.need,
        "would_be": would_be,
    }


def labels(panel, count, *, agreed=True, pattern=UNANIMOUS):
    changes = []
    for _ in range(count):
        changes += label_add(
            panel_id=panel.pk, detail=detail_of(panel, pattern), agreed=agreed, audit=False
        )
    return changes


def row(panel, pattern=UNANIMOUS) -> PatternEvidence:
    return PatternEvidence.objects.get(panel=panel, pattern=pattern)


def announced(endpoint) -> list[dict]:
    return [json.loads(d.body) for d in Delivery.objects.filter(endpoint=endpoint).order_by("id")]


@pytest.fixture
def watcher():
    client, _ = api_client("read", "read:all")
    endpoint, _ = subscribe(client, URL, ["panel.guarantee"])
    return endpoint


def test_the_label_that_clears_the_bound_makes_the_pattern_trusted_once(watcher):
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    assert labels(panel, 104) == []
    assert (row(panel).labels, row(panel).labels_to_trust, row(panel).trusted) == (104, 1, False)
    [change] = labels(panel, 1)
    assert change.trusted and change.pattern.key == UNANIMOUS
    assert row(panel).trusted and row(panel).lower_bound >= 0.95
    assert labels(panel, 5) == []  # trusted already: nothing more to say
    [body] = announced(watcher)
    assert body["type"] == "panel.guarantee"
    assert body["data"]["panel"] == {
        "id": panel.pk,
        "name": panel.name,
        "url": f"/api/panels/{panel.name}/guarantee",
    }
    assert body["data"]["pattern"]["routed"] == "machine"
    assert body["data"]["pattern"]["labels"] == 105
    [entry] = AuditEntry.objects.filter(actor_name="guarantee")
    assert entry.target_id == str(panel.pk) and "now trusted" in entry.note


def test_a_pattern_that_loses_trust_goes_back_to_people_at_once_and_says_so_once(watcher):
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    evidence(panel, UNANIMOUS, labels=200, agreed=200)
    assert evaluate_in_process(submit(panel, CONTENT)).status == Proposal.Status.DECIDED
    changes = labels(panel, 12, agreed=False)
    assert [c.trusted for c in changes] == [False]
    assert not row(panel).trusted
    held = evaluate_in_process(submit(panel, CONTENT))
    assert held.escalations.get().reasons == ["below_guarantee"]
    bodies = announced(watcher)
    assert [b["data"]["pattern"]["trusted"] for b in bodies] == [True, False]
    lost = AuditEntry.objects.filter(actor_name="guarantee").order_by("-id")[0]
    assert "not trusted: humans decide" in lost.note
    assert lost.changes == {
        "guarantee: 3 of 3 pass, no checkers": {"old": "trusted", "new": "not trusted"}
    }


def test_a_stronger_pattern_losing_trust_takes_the_weaker_ones_with_it():
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    evidence(panel, UNANIMOUS, labels=200, agreed=200)
    evidence(panel, MAJORITY, labels=400, agreed=400)
    assert row(panel, MAJORITY).trusted
    changes = labels(panel, 12, agreed=False)
    assert {c.pattern.key for c in changes} == {UNANIMOUS, MAJORITY}
    assert row(panel, MAJORITY).clears and not row(panel, MAJORITY).trusted
    assert row(panel, MAJORITY).waits_on == UNANIMOUS


def test_raising_the_target_takes_trust_away_and_announces_it(watcher):
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    evidence(panel, UNANIMOUS, labels=200, agreed=200)
    changes = guarantee_configure(
        panel=panel, target=0.99, confidence=0.95, audit_focus="flat", actor="test"
    )
    assert [c.trusted for c in changes] == [False]
    assert [b["data"]["target"] for b in announced(watcher)] == [0.95, 0.99]


def test_turning_the_guarantee_off_trusts_nothing_and_the_quorum_decides_again():
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    evidence(panel, UNANIMOUS, labels=200, agreed=200)
    guarantee_configure(panel=panel, target=None, confidence=0.95, audit_focus="flat", actor="t")
    assert not row(panel).trusted
    assert evaluate_in_process(submit(panel, CONTENT)).decision.outcome == "approved"


def test_a_client_that_cannot_see_every_proposal_hears_nothing():
    client, _ = api_client("submit", "read")
    endpoint, _ = subscribe(client, URL, ["panel.guarantee"])
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    labels(panel, 105)
    assert announced(endpoint) == []


def test_a_new_lens_version_starts_new_evidence():
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    evidence(panel, UNANIMOUS, labels=200, agreed=200)
    lens = panel.ordered_lenses()[0]
    lens.version += 1
    lens.save()
    held = evaluate_in_process(submit(panel, CONTENT))
    assert held.escalations.get().reasons == ["below_guarantee"]
    assert held.escalations.get().detail["guarantee"]["labels"] == 0


def test_labels_of_an_old_configuration_never_count_in_the_new_one():
    panel = guaranteed(voting_panel(["pass", "pass", "pass"]))
    old = detail_of(panel)
    lens = panel.ordered_lenses()[0]
    lens.version += 1
    lens.save()
    label_add(panel_id=panel.pk, detail=old, agreed=True, audit=True)
    current = configuration_key(panel_snapshot(panel))
    assert not PatternEvidence.objects.filter(configuration=current).exists()
    assert PatternEvidence.objects.get(configuration=old["configuration"]).audited == 1
