"""Jobs for a real LLM loop, and where their answers went."""

import asyncio
import threading

from reviewapp.core.cite import GroundingPolicy
from reviewapp.review.evaluation import llm_loop

CONTENT = "The migration is reversible and takes under a minute."
CITE = "The migration is reversible"


class Outcomes:
    """Where each job's answers went: recorded here (and on which thread), or sent on."""

    def __init__(self) -> None:
        self.here: list[tuple[threading.Thread, int, list[dict]]] = []
        self.sent: list[tuple[int, list[dict]]] = []

    def job(self, lens, proposal_id=1, finish_here=None) -> llm_loop.LlmJob:
        def here(answers):
            self.here.append((threading.current_thread(), proposal_id, answers))

        return llm_loop.LlmJob(
            proposal_id=proposal_id,
            content=CONTENT,
            thought_process="",
            policy=GroundingPolicy.REJECT,
            lenses=[lens],
            finish_here=finish_here or here,
            deliver=lambda answers: self.sent.append((proposal_id, answers)),
        )


def judge(runtime, *jobs):
    """Judge the jobs on the runtime's loop; return once each has handed its answers over."""

    async def all_of():
        await asyncio.gather(*(runtime.judge_job(job) for job in jobs))

    asyncio.run_coroutine_threadsafe(all_of(), runtime.loop).result(10)
