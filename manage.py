#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewapp.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # A setting to fix, not a bug: say which, without a traceback.
        sys.exit(f"reviewapp is not configured: {exc}")


if __name__ == "__main__":
    main()
