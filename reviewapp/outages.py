"""A database restart or failover, as the API and the pages both answer it (503).

Which errors mean the database is unreachable, and how long a client should
wait before it retries (the Retry-After header).
"""

from django.db import InterfaceError, OperationalError

DATABASE_UNAVAILABLE = (OperationalError, InterfaceError)
RETRY_AFTER_SECONDS = 5
