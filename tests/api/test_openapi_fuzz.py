"""Schemathesis against /api/openapi.json: no 5xx, no response that contradicts the schema."""

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from reviewapp.api.schemas import ProposalIn
from reviewapp.review.models import ApiClient
from tests.factories import LensFactory, PanelFactory

from .conftest import ALL_SCOPES, evaluated

# Fixed, so schemathesis knows the header when it builds the tests (at
# collection) and never "negates" it into a request that only looks unauthenticated.
FUZZ_TOKEN = "rva_schemathesis-fuzzing-token-valid-only-in-tests"


@pytest.fixture
def in_test_transaction():
    """Let the in-process WSGI app share the test's transaction.

    Django's handler closes "old" connections around each request, which inside
    the test transaction would poison it; Django's own test Client disconnects
    the same receivers.
    """
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def seeded(db, in_test_transaction, external_panel, settings):
    settings.REVIEWAPP_API_RATE_LIMIT_PER_MINUTE = 1_000_000
    ApiClient.objects.create(
        name="schemathesis",
        token_prefix=FUZZ_TOKEN[:12],
        token_hash=ApiClient.hash_token(FUZZ_TOKEN),
        scopes=list(ALL_SCOPES),
    )
    # The panel the documented example submits to, so that example is accepted.
    PanelFactory(
        name=ProposalIn.model_json_schema()["examples"][0]["panel"], lenses=[LensFactory()]
    )
    # Something for generated ids to find: a decided and an escalated proposal.
    evaluated("The answer is 42.")
    evaluated("Ship it.", requires_sign_off=True)


# Loaded at import, not through `schemathesis.pytest.from_fixture`, whose lazy
# loader does not run under pytest 9. Serving the schema needs no database.
schema = schemathesis.openapi.from_wsgi("/api/openapi.json", get_wsgi_application())
schema.config.update(headers={"Authorization": f"Bearer {FUZZ_TOKEN}"})


@schema.parametrize()
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_honours_its_openapi_schema(case, seeded):
    case.call_and_validate(
        # Schema-valid is not enough to be accepted, by design: an unknown panel
        # or lens, a forged cursor or a NUL character is a 422 the schema cannot express.
        excluded_checks=[positive_data_acceptance],
    )
