"""Connections to the embedded broker in a folder of a test's own."""

from pathlib import Path

from kombu import Connection
from kombu.transport.virtual import BrokerState

from reviewapp.embedded_broker import Transport


class FolderTransport(Transport):
    """The embedded transport with broker state of its own.

    kombu keeps the filesystem transport's declared queues and bindings in one
    in-process state, whatever the folder: a binding the app's own broker
    declared would count as made in a test's folder too, and a message sent
    there would be routed nowhere.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.state = BrokerState()


def embedded_options(folder: Path, **extra) -> dict:
    """The embedded broker's transport options for `folder` (its channels make the folders)."""
    return {
        "data_folder_in": str(folder / "queue"),
        "data_folder_out": str(folder / "queue"),
        "control_folder": str(folder / "control"),
        "processed_folder": str(folder / "processed"),
        "staging_folder": str(folder / "staging"),
        **extra,
    }


def embedded_connection(folder: Path, **extra) -> Connection:
    options = embedded_options(folder, **extra)
    return Connection("filesystem://", transport=FolderTransport, transport_options=options)
