import pytest

from reviewapp.review.models import Lens
from tests.core.openai_stub import Answer
from tests.factories import LensFactory
from tests.review.evaluation.llm_loop.support import CITE
from tests.review.helpers import judgement
from tests.support.llm_loop import running_loop


@pytest.fixture
def runtime(settings):
    with running_loop() as made:
        yield made


@pytest.fixture
def lens(openai_server):
    openai_server.respond = lambda request: Answer(judgement("pass", CITE))
    return LensFactory(
        backend=Lens.Backend.LLM, base_url=openai_server.base_url, model="m", timeout_seconds=5
    )
