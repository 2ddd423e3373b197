"""The judge loop shared by the ``llm`` and ``recorded`` backends."""

from reviewapp.core.judging.transport import *  # noqa: F403
from reviewapp.core.judging.transport import _answer_of, _request_body  # noqa: F401
