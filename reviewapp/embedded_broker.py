"""The embedded broker: kombu's filesystem transport, safe for several processes.

kombu's filesystem transport writes a message by creating its file in the queue
folder and then writing into it, so a consumer in another process can take the file
while it is still empty and fail with "Unrecoverable error: JSONDecodeError", which
stops the worker (seen right after beat sent a task). Its exchange tables (the
fan-out bindings behind remote control, which /healthz uses) are rewritten in
place the same way, and a consumer moves a message out with `shutil.move` into the
system temporary directory, which is a copy when that is another filesystem.

Here every file appears whole or not at all: a message is written in a staging
folder beside the queue and renamed into it; a consumer claims a message by
renaming it into the processed folder (one process wins, the others move on); an
exchange table is changed under a lock file and replaced by rename. Renames within
one directory tree are atomic on POSIX filesystems.
"""

import os
import uuid
from pathlib import Path
from queue import Empty
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem, virtual
from kombu.transport.filesystem import LOCK_EX, exchange_queue_t, lock, unlock
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads
from kombu.utils.objects import cached_property


def _write_whole(path: Path, data: bytes, staging: Path) -> None:
    """Make `path` hold `data`, never anything partial, as seen from any process."""
    temporary = staging / f".{path.name}.{uuid.uuid4().hex}.tmp"
    with open(temporary, "wb") as handle:
        handle.write(data)
    os.replace(temporary, path)


class Channel(filesystem.Channel):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # kombu's transport lists and moves into its folders without making them.
        for folder in (self.data_folder_in, self.data_folder_out, self.processed_folder):
            Path(folder).mkdir(parents=True, exist_ok=True)
        self.control_folder.mkdir(parents=True, exist_ok=True)

    @cached_property
    def staging_folder(self) -> Path:
        folder = Path(
            self.transport_options.get(
                "staging_folder", Path(self.data_folder_out).parent / "staging"
            )
        )
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def _put(self, queue, payload, **kwargs):
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        try:
            _write_whole(
                Path(self.data_folder_out) / name, str_to_bytes(dumps(payload)), self.staging_folder
            )
        except OSError as exc:
            raise ChannelError(f"Cannot add message {name!r} to the queue folder") from exc

    def _get(self, queue):
        wanted = f"{queue}.msg"
        processed = Path(self.processed_folder)
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.partition(".")[2] != wanted:
                continue
            claimed = processed / name
            try:
                # Atomic on one filesystem: exactly one consumer gets the message.
                os.rename(os.path.join(self.data_folder_in, name), claimed)
            except FileNotFoundError:
                continue  # another consumer took it first
            try:
                payload = claimed.read_bytes()
                if not self.store_processed:
                    claimed.unlink()
            except OSError as exc:
                raise ChannelError(f"Cannot read message {name!r}") from exc
            return loads(bytes_to_str(payload))
        raise Empty()

    # ---- exchange tables: read whole, changed under a lock, replaced by rename ----

    def get_table(self, exchange):
        try:
            data = self._exchange_file(exchange).read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ChannelError(f"Cannot open the table of exchange {exchange!r}") from exc
        return [exchange_queue_t(*q) for q in loads(bytes_to_str(data))]

    def _change_table(self, exchange, change) -> None:
        file = self._exchange_file(exchange)
        self.control_folder.mkdir(parents=True, exist_ok=True)
        with open(file.with_name(file.name + ".lock"), "ab") as guard:
            lock(guard, LOCK_EX)
            try:
                queues = self.get_table(exchange)
                changed = change(queues)
                if changed is not None:
                    _write_whole(file, str_to_bytes(dumps(changed)), self.control_folder)
            finally:
                unlock(guard)

    def _queue_bind(self, exchange, routing_key, pattern, queue):
        entry = exchange_queue_t(routing_key or "", pattern or "", queue or "")
        self._change_table(exchange, lambda queues: None if entry in queues else [entry, *queues])

    def _delete(self, queue, exchange, routing_key, pattern, *args, **kwargs):
        virtual.Channel._delete(self, queue, exchange, routing_key, pattern, *args, **kwargs)
        entry = exchange_queue_t(routing_key or "", pattern or "", queue or "")
        self._change_table(
            exchange,
            lambda queues: [q for q in queues if q != entry] if entry in queues else None,
        )


class Transport(filesystem.Transport):
    Channel = Channel
    # The filesystem transport's in-process broker state, shared with it.
    global_state = filesystem.Transport.global_state
