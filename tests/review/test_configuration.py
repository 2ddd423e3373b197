"""Lenses, checkers and panels the core refuses cannot be stored, through any door."""

import json

import pytest
from django.core import serializers
from django.core.exceptions import ValidationError

from reviewapp.review.models import CheckerConfig, Judgement, Lens, Panel
from reviewapp.review.services.panels import panel_configure
from reviewapp.review.services.proposals import PanelUnavailable, proposal_submit
from tests.factories import CheckerFactory, LensFactory, PanelFactory, recorded
from tests.review.helpers import evaluate_in_process, judgement, submit

pytestmark = pytest.mark.django_db


def test_editing_a_lens_bumps_its_version():
    lens = LensFactory()
    lens.instructions = "A sharper angle."
    lens.save()
    lens.refresh_from_db()
    assert lens.version == 2


def test_saving_a_lens_unchanged_keeps_its_version():
    lens = LensFactory()
    lens.save()
    lens.refresh_from_db()
    assert lens.version == 1


def test_old_judgements_keep_the_lens_version_they_were_made_with():
    lens = LensFactory()
    recorded(lens, "Answer.", judgement("pass"))
    evaluate_in_process(submit(PanelFactory(lenses=[lens]), "Answer."))
    lens.instructions = "Changed."
    lens.save()
    assert Judgement.objects.get().lens_version == 1
    assert Lens.objects.get().version == 2


def test_a_blank_lens_name_is_refused():
    with pytest.raises(ValidationError):
        LensFactory(name="   ")


def test_a_lens_named_with_an_information_separator_is_a_name_like_in_the_quorum():
    assert LensFactory(name="\x1e").name == "\x1e"


def test_an_llm_lens_without_endpoint_is_refused():
    with pytest.raises(ValidationError, match="base URL"):
        LensFactory(backend=Lens.Backend.LLM, base_url="", model="m")


def test_an_llm_lens_with_credentials_in_its_base_url_is_refused_saying_where_the_key_goes():
    with pytest.raises(ValidationError) as refused:
        LensFactory(
            backend=Lens.Backend.LLM,
            base_url="http://svc:topsecret@llm.internal/v1",
            model="m",
            api_key_env="LLM_API_KEY",
        )
    message = " ".join(refused.value.message_dict["base_url"])
    assert "credentials" in message and "API key variable" in message
    assert "topsecret" not in message
    assert not Lens.objects.exists()


@pytest.mark.parametrize(
    ("base_url", "says"),
    [
        ("http://169.254.169.254/latest/v1", "link-local"),
        ("http://[fe80::1]:8000/v1", "link-local"),
        ("http://[fd00:ec2::254]/v1", "cloud metadata service"),
        ("http://100.100.100.200/v1", "cloud metadata service"),
        ("http://metadata.google.internal/v1", "cloud metadata service"),
        ("http://[::ffff:169.254.169.254]/v1", "link-local"),
        ("http://100.64.0.7:11434/v1", "neither public nor private"),
    ],
)
def test_an_llm_lens_may_not_point_at_metadata_or_link_local_addresses(base_url, says):
    with pytest.raises(ValidationError) as refused:
        LensFactory(backend=Lens.Backend.LLM, base_url=base_url, model="m")
    assert says in " ".join(refused.value.message_dict["base_url"])


@pytest.mark.parametrize(
    "base_url",
    [
        "http://10.1.2.3:11434/v1",
        "http://192.168.0.20/v1",
        "http://127.0.0.1:8080/v1",
        "http://[fd12:3456::1]/v1",
        "https://api.openai.com/v1",
    ],
)
def test_private_loopback_and_public_endpoints_are_allowed(base_url):
    assert LensFactory(backend=Lens.Backend.LLM, base_url=base_url, model="m").pk


def test_the_allow_list_admits_other_networks_but_never_metadata(settings):
    settings.REVIEWAPP_LLM_ALLOWED_NETWORKS = ["100.64.0.0/10", "169.254.0.0/16"]

    assert LensFactory(backend=Lens.Backend.LLM, base_url="http://100.64.0.7/v1", model="m").pk
    with pytest.raises(ValidationError, match="link-local"):
        LensFactory(backend=Lens.Backend.LLM, base_url="http://169.254.169.254/v1", model="m")
    with pytest.raises(ValidationError, match="metadata"):
        LensFactory(backend=Lens.Backend.LLM, base_url="http://100.100.100.200/v1", model="m")


def test_a_constraints_lens_with_no_checkable_clause_is_refused():
    with pytest.raises(ValidationError):
        LensFactory(backend=Lens.Backend.CONSTRAINTS, mandate="be nice")


def test_a_checker_with_a_network_grant_is_refused():
    with pytest.raises(ValidationError, match="net"):
        CheckerFactory(
            kind=CheckerConfig.Kind.COMMAND,
            settings={"argv": ["/bin/true"], "timeout_seconds": 1},
            grants=["proc:exec:/bin/true", "net:connect"],
        )


def test_a_checker_with_an_invalid_regex_is_refused():
    with pytest.raises(ValidationError):
        CheckerFactory(settings={"pattern": "(unclosed", "must_match": True})


def test_a_refused_checker_cannot_be_loaded_from_a_fixture():
    fixture = json.dumps(
        [
            {
                "model": "review.checkerconfig",
                "pk": 99,
                "fields": {
                    "name": "sneaky",
                    "kind": "command",
                    "settings": {"argv": ["/usr/bin/curl"], "timeout_seconds": 1},
                    "grants": ["net:connect"],
                    "active": True,
                    "version": 1,
                    "created_at": "2026-01-01T00:00:00Z",
                    "updated_at": "2026-01-01T00:00:00Z",
                },
            }
        ]
    )
    with pytest.raises(ValidationError):
        for obj in serializers.deserialize("json", fixture):
            obj.save()
    assert not CheckerConfig.objects.exists()


@pytest.mark.parametrize(
    ("need", "names", "why"),
    [
        (0, ["a", "b"], "NeedsNobody"),
        (3, ["a", "b"], "Unreachable"),
        (1, ["a", "b", "c"], "NotAMajority"),
    ],
)
def test_panel_configure_refuses_what_the_quorum_refuses(need, names, why):
    lenses = [LensFactory(name=n) for n in names]
    with pytest.raises(ValidationError) as refused:
        panel_configure(name="p", need=need, lenses=lenses)
    assert refused.value.message_dict["need"]
    assert not Panel.objects.exists()


def test_panel_configure_refuses_a_repeated_lens():
    lens = LensFactory()
    with pytest.raises(ValidationError, match="more than once|repeat|twice"):
        panel_configure(name="p", need=2, lenses=[lens, lens])


def test_panel_configure_bumps_the_version_on_change_and_not_otherwise():
    lenses = [LensFactory() for _ in range(3)]
    panel_configure(name="p", need=2, lenses=lenses)
    panel_configure(name="p", need=2, lenses=lenses)
    assert Panel.objects.get().version == 1
    panel_configure(name="p", need=3, lenses=lenses)
    assert Panel.objects.get().version == 2


def test_submitting_to_a_panel_whose_quorum_is_broken_is_refused():
    panel = PanelFactory(lenses=[LensFactory()], need=2)  # written past the service
    with pytest.raises(PanelUnavailable, match="can never be reached"):
        proposal_submit(panel_name=panel.name, content="x")


def test_the_submission_snapshot_keeps_the_configuration_it_was_judged_with():
    lenses = [LensFactory() for _ in range(3)]
    panel = panel_configure(name="p", need=2, lenses=lenses)
    proposal = submit(panel, "Answer.")
    panel_configure(name="p", need=3, lenses=lenses)
    proposal.refresh_from_db()
    assert (proposal.panel_snapshot["need"], proposal.panel_version) == (2, 1)
