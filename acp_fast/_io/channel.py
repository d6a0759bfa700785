"""Channels: the byte pipes a connection reads and writes.

A connection does two things with its transport, many times per second:
take whatever bytes have arrived, and hand over bytes to send. A Channel
offers exactly that, shaped for the per-message path:

* ``receive()`` returns the next bytes that arrived (``b""`` at EOF). Reads
  go straight to the OS, never through an anyio stream per message: 64 KiB
  at a time, or, while a large line is arriving, up to 1 MiB into a buffer
  that is reused (never a fresh large buffer per read, see FdChannel).
* ``write(data)`` is synchronous and never blocks: it writes what the OS
  takes now and keeps the rest, which the channel's own ``run()`` task writes
  as the descriptor becomes writable. Order is always preserved.
* ``drain()`` waits until everything written has been handed to the OS;
  ``pending`` says how much is still held, so senders can be paced.
* ``close_write()`` drains, then ends the output (the peer sees EOF) while
  reading goes on; ``aclose()`` releases everything.

Failures of the underlying descriptor or stream surface as ``ChannelError``
from ``receive``/``write``/``drain``, which the connection turns into its
own failure (never a silent EOF).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from .backend import Backend, Waiter

__all__ = ("LARGE_READ_SIZE", "READ_SIZE", "Channel", "ChannelError")

READ_SIZE = 64 * 1024
LARGE_READ_SIZE = 1024 * 1024


class ChannelError(Exception):
    """The transport failed (not a clean EOF)."""


class Channel:
    """Base class: the buffering and draining shared by every channel."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        # Written by us, not yet by the OS. A partly written message is kept
        # as a memoryview of its rest: slicing bytes would copy the remainder
        # on every partial write, quadratic for a 10 MB message on a pipe.
        self._held: deque[bytes | memoryview] = deque()
        # Bytes written to the channel and not yet taken by the OS: read by
        # senders that pace themselves, per message (an attribute, not a
        # property, for that); only the channel changes it.
        self.pending = 0
        self._writer: Waiter | None = None  # the run() task, parked
        self._drainers: list[Waiter] = []
        self._failure: BaseException | None = None
        self._write_closed = False
        self._eof_requested = False
        # A hint from the reader: a line this long is being received.
        self.read_hint = 0
        # Set by transports that know how the peer ended (a process we
        # started): returns what the requests its EOF fails should say.
        self.describe_end: Callable[[], Awaitable[dict[str, Any]]] | None = None

    def ended_because(self, reason: str) -> None:
        """Say why the input ended (a remote link that broke, a server's
        Close): the requests its EOF fails carry ``data.transport``."""

        async def describe() -> dict[str, Any]:
            return {"transport": reason}

        self.describe_end = describe

    # -- reading ------------------------------------------------------------

    async def receive(self) -> bytes:
        raise NotImplementedError

    # -- writing ------------------------------------------------------------

    def write(self, data: bytes) -> None:
        if self._failure is not None:
            raise ChannelError(f"cannot write: {self._failure}") from self._failure
        if self._write_closed:
            raise ChannelError("cannot write: output already closed")
        if not self._held:
            try:
                written = self._write_now(data)
            except ChannelError as exc:
                self._fail(exc)
                raise
            if written == len(data):
                return
            rest = memoryview(data)[written:]
            self._held.append(rest)
            self.pending += len(rest)
        else:
            self._held.append(data)
            self.pending += len(data)
        self._wake_writer()

    def _write_now(self, data: bytes | memoryview) -> int:
        """Write as much as possible without blocking; return the count."""
        raise NotImplementedError

    async def _wait_writable(self) -> None:
        raise NotImplementedError

    def _wake_writer(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.set()

    async def run(self) -> None:
        """Write held data as the transport accepts it (one task per channel).

        Returns once the output was ended (close_write) or failed.
        """
        while True:
            while not self._held:
                if self._write_closed or self._failure is not None:
                    return
                if self._eof_requested:
                    self._close_output()
                    return
                self._writer = self.backend.new_waiter()
                await self._writer.wait()
            while self._held:
                data = self._held[0]
                try:
                    written = self._write_now(data)
                except ChannelError as exc:
                    self._fail(exc)
                    return
                self.pending -= written
                if written == len(data):
                    self._held.popleft()
                    continue
                self._held[0] = memoryview(data)[written:]
                await self._wait_writable()
            self._release_drainers()

    def _close_output(self) -> None:
        self._write_closed = True
        try:
            self._end_output()
        except OSError:
            pass
        self._release_drainers()

    async def drain(self) -> None:
        """Wait until everything written so far was handed to the OS."""
        while self._writing() and self._failure is None:
            waiter = self.backend.new_waiter()
            self._drainers.append(waiter)
            self._wake_writer()
            await waiter.wait()
        if self._failure is not None:
            raise ChannelError(f"write failed: {self._failure}") from self._failure

    def _writing(self) -> bool:
        """Whether written data is still on its way to the OS."""
        return bool(self._held)

    async def close_write(self) -> None:
        """Drain, then end the output: the peer reads EOF; reading goes on."""
        if self._write_closed or self._eof_requested:
            return
        await self.drain()
        self._eof_requested = True
        if not self._held:
            self._close_output()
        self._wake_writer()

    def _end_output(self) -> None:
        raise NotImplementedError

    def _release_drainers(self) -> None:
        drainers, self._drainers = self._drainers, []
        for waiter in drainers:
            waiter.set()

    def _fail(self, exc: BaseException) -> None:
        if self._failure is None:
            self._failure = exc
        self._held.clear()
        self.pending = 0
        self._release_drainers()

    async def aclose(self) -> None:
        raise NotImplementedError
