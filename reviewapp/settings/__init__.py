"""Settings, read from the environment: one module per part of the product.

Every value comes from an environment variable (or `.env`) through
`environment.read`, and a value that cannot be used stops the process at start-up
with a message naming the variable. These modules only read and check values;
what needs the machine (directories made, a user or a key file looked up) is
reviewapp/startup.py's.
"""

from reviewapp.settings.broker import *  # noqa: F403
from reviewapp.settings.environment import *  # noqa: F403
from reviewapp.settings.ledger import *  # noqa: F403
from reviewapp.settings.notifications import *  # noqa: F403
from reviewapp.settings.review import *  # noqa: F403
from reviewapp.settings.web import *  # noqa: F403
from reviewapp.settings.webhooks import *  # noqa: F403
