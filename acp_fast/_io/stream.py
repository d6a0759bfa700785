"""A channel over anyio byte streams."""

from __future__ import annotations

from typing import cast

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from .backend import Backend
from .channel import LARGE_READ_SIZE, READ_SIZE, Channel, ChannelError

__all__ = ("StreamChannel",)


class StreamChannel(Channel):
    """A channel over any anyio byte streams (TLS, custom transports, ...).

    This is the generic path: one anyio ``send`` per batch of writes, never
    one per message, and reads of whatever the stream yields.
    """

    def __init__(
        self,
        backend: Backend,
        receive_stream: ByteReceiveStream,
        send_stream: ByteSendStream,
    ) -> None:
        super().__init__(backend)
        self._receive_stream = receive_stream
        self._send_stream = send_stream

    async def receive(self) -> bytes:
        try:
            if self.read_hint > READ_SIZE:
                # A large line is arriving: take it in larger pieces.
                return await self._receive_stream.receive(LARGE_READ_SIZE)
            return await self._receive_stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return b""
        except Exception as exc:
            # Any other failure of the stream (BrokenResourceError, OSError,
            # IncompleteRead, a custom stream's own exception) is a read error:
            # the connection fails with it as an acp.Error, never as a clean
            # EOF and never as a raw exception escaping its task group
            # (docs/semantics.md §2.7, §7).
            raise ChannelError(f"read failed: {exc!r}") from exc

    def _write_now(self, data: bytes | memoryview) -> int:
        return 0  # everything goes through run()

    async def run(self) -> None:
        while True:
            while not self._held:
                if self._write_closed or self._failure is not None:
                    return
                if self._eof_requested:
                    self._write_closed = True
                    await self._send_eof()
                    self._release_drainers()
                    return
                self._writer = self.backend.new_waiter()
                await self._writer.wait()
            data = b"".join(self._held)
            size = self.pending
            self._held.clear()
            try:
                await self._send_stream.send(data)
            except Exception as exc:
                # As for reads: whatever the stream raises is a write failure
                # of the transport (§2.7), reported through _failure, not an
                # exception escaping the connection's task group.
                self._fail(exc)
                return
            self.pending -= size
            if not self._held:
                self._release_drainers()

    def _writing(self) -> bool:
        # Held data is in flight until run() finished sending it.
        return bool(self._held or self.pending)

    async def close_write(self) -> None:
        if self._write_closed or self._eof_requested:
            return
        await self.drain()
        self._eof_requested = True
        self._write_closed = True
        await self._send_eof()

    async def _send_eof(self) -> None:
        send_eof = getattr(self._send_stream, "send_eof", None)
        try:
            if send_eof is not None and cast(object, self._send_stream) is self._receive_stream:
                await send_eof()
            else:
                await self._send_stream.aclose()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass

    def _end_output(self) -> None:  # pragma: no cover - run() handles EOF itself
        pass

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            for stream in {id(s): s for s in (self._send_stream, self._receive_stream)}.values():
                try:
                    await stream.aclose()
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    pass
