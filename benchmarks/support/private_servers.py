"""Private PostgreSQL and Redis servers, for drills that restart them.

Drills that restart PostgreSQL or Redis never touch the machine's shared
servers: `PrivatePostgres` and `PrivateRedis` start throwaway instances
(initdb/pg_ctl as the `postgres` OS user on port 55432; redis-server on 56379
without persistence) that the drill may restart at will.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from pathlib import Path

from .processes import wait_port

PG_BIN = Path("/usr/lib/postgresql/15/bin")


class PrivatePostgres:
    """A throwaway PostgreSQL cluster (trust auth) under /tmp, owned by the postgres user."""

    def __init__(self, port: int = 55432, data_dir: str | None = None):
        self.port = port
        self.data_dir = Path(data_dir or f"/tmp/reviewapp-drill-pg-{port}")
        self.log_file = self.data_dir.with_suffix(".log")

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}"

    def _as_postgres(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["runuser", "-u", "postgres", "--", *argv],
            check=check,
            capture_output=True,
            text=True,
            cwd="/tmp",
        )

    def start(self) -> PrivatePostgres:
        self.stop(quiet=True)
        if self.data_dir.exists():
            shutil.rmtree(self.data_dir)
        self.data_dir.mkdir(parents=True)
        shutil.chown(self.data_dir, "postgres", "postgres")
        self._as_postgres(
            str(PG_BIN / "initdb"),
            "-D",
            str(self.data_dir),
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
        )
        with open(self.data_dir / "postgresql.conf", "a") as conf:
            conf.write(
                f"\nport = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                "unix_socket_directories = '/tmp'\nfsync = off\nmax_connections = 200\n"
            )
        self._pg_ctl("start")
        return self

    def _pg_ctl(self, action: str, *extra: str, check: bool = True):
        return self._as_postgres(
            str(PG_BIN / "pg_ctl"),
            "-D",
            str(self.data_dir),
            "-l",
            str(self.log_file),
            "-w",
            "-t",
            "60",
            action,
            *extra,
            check=check,
        )

    def restart(self, down_seconds: float = 0.0) -> None:
        """Fast shutdown (every session is cut), stay down a moment, start again."""
        self._pg_ctl("stop", "-m", "fast")
        time.sleep(down_seconds)
        self._pg_ctl("start")

    def stop(self, quiet: bool = False) -> None:
        if (self.data_dir / "postmaster.pid").exists():
            self._pg_ctl("stop", "-m", "immediate", check=not quiet)

    def destroy(self) -> None:
        self.stop(quiet=True)
        shutil.rmtree(self.data_dir, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            self.log_file.unlink()


class PrivateRedis:
    """A throwaway redis-server without persistence: a restart loses every message."""

    def __init__(self, port: int = 56379):
        self.port = port
        self.pidfile = Path(f"/tmp/reviewapp-drill-redis-{port}.pid")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> PrivateRedis:
        subprocess.run(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "yes",
                "--pidfile",
                str(self.pidfile),
                "--logfile",
                f"/tmp/reviewapp-drill-redis-{self.port}.log",
            ],
            check=True,
        )
        wait_port(self.port)
        return self

    def stop(self) -> None:
        subprocess.run(
            ["redis-cli", "-p", str(self.port), "shutdown", "nosave"],
            capture_output=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
            except OSError:
                return
            time.sleep(0.1)

    def restart(self, down_seconds: float = 0.0) -> None:
        self.stop()
        time.sleep(down_seconds)
        self.start()

    def destroy(self) -> None:
        self.stop()
        for path in (self.pidfile, Path(f"/tmp/reviewapp-drill-redis-{self.port}.log")):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
