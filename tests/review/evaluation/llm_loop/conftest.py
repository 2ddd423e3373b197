import asyncio

import pytest

from reviewapp.celery import app as celery_app
from reviewapp.review.evaluation.llm_loop import process
from reviewapp.review.models import Lens
from tests.core.openai_stub import Answer
from tests.factories import LensFactory
from tests.review.evaluation.llm_loop.support import CITE
from tests.review.helpers import judgement


@pytest.fixture
def runtime(settings):
    # What happens to kept answers depends on the real broker's queue: empty to begin with.
    pass
    celery_app.control.purge()
    made = process.Runtime()
    yield made

    async def close():
        for session in made.sessions.values():
            await session.close()
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                task.cancel()

    asyncio.run_coroutine_threadsafe(close(), made.loop).result(5)
    made.loop.call_soon_threadsafe(made.loop.stop)
    celery_app.control.purge()


@pytest.fixture
def lens(openai_server):
    openai_server.respond = lambda request: Answer(judgement("pass", CITE))
    return LensFactory(
        backend=Lens.Backend.LLM, base_url=openai_server.base_url, model="m", timeout_seconds=5
    )
