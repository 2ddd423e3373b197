"""Stopping a server a test started in a session of its own."""

import os
import signal
import subprocess


def interrupt(process: subprocess.Popen, *, grace: float) -> None:
    """Ctrl-C to its process group, as a person stops it; SIGKILL past `grace` seconds."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
