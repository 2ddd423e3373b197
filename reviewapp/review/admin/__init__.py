"""The configuration admin: lenses, panels, checkers, API clients, signing keys, decision tags.

Every save goes through the same refusals as every other door (the model's
clean(), core.quorum, the checker ceiling) and is recorded as an audit entry
with a field diff. Custom pages hang off `get_urls()` and are wrapped in
`admin_site.admin_view`, so they are staff-only like the rest of the admin.
"""

# Each module registers its model's admin when imported.
from . import api_client, assignment, checker, lens, panel, signing_key, tag  # noqa: F401
