"""Reading the environment: every setting module reads through `read`.

A value that cannot be used stops the process at start-up with a message naming
the variable: a typo must never silently fall back to a default in production."""

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from environs import Env, EnvError

BASE_DIR = Path(__file__).resolve().parents[2]

env = Env()
env.read_env(BASE_DIR / ".env", recurse=False)


def read(reader, name, **kwargs):
    try:
        return reader(name, **kwargs)
    except EnvError as exc:
        raise ImproperlyConfigured(f"{name}: {exc}") from exc


DEBUG = read(env.bool, "DEBUG", default=False)
# Made when Django is set up (reviewapp.startup.prepare_var_dir).
VAR_DIR = Path(read(env.str, "REVIEWAPP_VAR_DIR", default=str(BASE_DIR / "var"))).resolve()
