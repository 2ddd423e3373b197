"""``python -m reviewapp_client.verify``: the same command as ``reviewapp-verify``."""

import sys

from reviewapp_client.verify.cli import main

sys.exit(main())
