"""Evaluation: how a submitted proposal gets judged.

The Celery tasks (`tasks`), the LLM loop each worker process runs
(`llm_loop/`), the lens backends (`evaluators`), the per-endpoint call limits
(`endpoint_limits`), trying a lens or checker on a sample (`trial`), and what
those read from the host: the checker sandbox, the API key variables a lens
may name, and whether a task waits in the queue. Judgements, evidence and
outcomes are written through `review/services/`.
"""
