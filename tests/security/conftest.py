import pytest
from django.apps import apps
from django.contrib.auth.models import Group
from django.contrib.contenttypes.models import ContentType

from reviewapp.audit.trials import trial_start
from reviewapp.replay.services import regression_case_add, replay_plan
from reviewapp.review.models import Decision, Escalation
from reviewapp.review.services.clients import api_client_create
from tests.factories import CheckerFactory, ReviewerFactory, UserFactory
from tests.support.module_rows import refuse_transactional, written_for_the_module
from tests.web.builders import judgement, make_panel, run_panel, split_panel_proposal


@pytest.fixture(scope="module")
def _module_rows(django_db_setup, django_db_blocker):
    """The world and the users, written once for each module that asks for them."""
    with written_for_the_module(django_db_blocker):
        yield {"world": _build_world(), "users": _build_users()}


@pytest.fixture
def world(request, db, _module_rows):
    """One of everything a URL can name: a decided proposal with its decision, an escalation.
    Shared by the module's tests: read it, never change it in memory."""
    refuse_transactional(request)
    return _module_rows["world"]


@pytest.fixture
def users(request, db, _module_rows):
    """A plain user, a reviewer, a staff user and a superuser, shared by the module's tests."""
    refuse_transactional(request)
    return _module_rows["users"]


def _build_world():
    Group.objects.get_or_create(name="reviewers")
    panel = make_panel("accuracy", "tone", checkers=[CheckerFactory(name="sec-checker")])
    escalated = split_panel_proposal(panel, external_ref="sec-1")
    decided_panel = make_panel("solo", need=1)
    decided = run_panel(decided_panel, "All good here.", {"solo": judgement("pass", "All good")})
    assert decided.status == "decided", decided.status
    escalation = Escalation.objects.get(proposal=escalated)
    # Rows for the admin pages that would otherwise have nothing to show.
    api_client_create(name="sec-world-client", scopes=["read"])
    trial_start(kind="checker", target=CheckerFactory(), sample="Sample text.")
    decision = Decision.objects.get(proposal=decided)
    # A replay and a regression case, so their admin pages are asked about real rows.
    regression_case_add(proposal=decided)
    replay_plan(panel=decided_panel, source="regression")
    ids = {
        "proposals": escalated.pk,
        "escalations": escalation.pk,
        "decisions": decision.pk,
        "contenttype": ContentType.objects.get_for_model(type(escalated)).pk,
    }
    for model in apps.get_models():
        row = model._default_manager.order_by("pk").values_list("pk", flat=True).first()
        ids.setdefault(f"admin_{model._meta.model_name}", row if row is not None else 1)
    return {
        "ids": ids,
        "escalated": escalated,
        "decided": decided,
        "escalation": escalation,
        "decision": decision,
    }


def _build_users():
    Group.objects.get_or_create(name="reviewers")
    return {
        "plain": UserFactory(username="plain-user"),
        "reviewer": ReviewerFactory(username="rev-user"),
        "staff": UserFactory(username="staff-user", is_staff=True),
        "superuser": UserFactory(username="root-user", is_staff=True, is_superuser=True),
    }
