"""A child process as a transport: its stdin and stdout are the connection.

The child is started when the connection opens. When the connection ends the
child is shut down gracefully, in steps: its stdin is closed (an ACP agent
exits when its input ends), then after ``grace_period`` it is terminated, and
after another ``grace_period`` killed. Its stderr is passed through to ours
unless ``stderr`` says otherwise.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import IO, Any

import anyio

from .._async._backend import Backend
from ._channel import Channel, FdChannel
from .base import Transport

__all__ = ("Subprocess",)


class Subprocess(Transport):
    """Run ``command`` (argv list) and talk to it over its stdin/stdout.

    ``process`` holds the ``subprocess.Popen`` object while it runs, and
    ``returncode`` its exit status afterwards.
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: int | IO[Any] | None = None,
        grace_period: float = 2.0,
    ) -> None:
        if isinstance(command, str):
            raise TypeError("command is an argv list, not a string")
        self.command = list(command)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.stderr = stderr
        self.grace_period = grace_period
        self.process: subprocess.Popen[bytes] | None = None
        self.returncode: int | None = None

    @asynccontextmanager
    async def _open(self, backend: Backend) -> AsyncIterator[Channel]:
        # fork/exec takes a few milliseconds, once per connection; the pipes
        # it returns are then driven without blocking.
        process = subprocess.Popen(  # noqa: ASYNC220
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr if self.stderr is not None else sys.stderr,
            env=self.env,
            cwd=self.cwd,
            bufsize=0,
        )
        self.process = process
        assert process.stdin is not None and process.stdout is not None
        # The channel owns the pipe descriptors from here on.
        write_fd = os.dup(process.stdin.fileno())
        read_fd = os.dup(process.stdout.fileno())
        process.stdin.close()
        process.stdout.close()
        channel = FdChannel(backend, read_fd, write_fd, close_fds=True)
        try:
            yield channel
        finally:
            with anyio.CancelScope(shield=True):
                await channel.aclose()
                self.returncode = await _shut_down(backend, process, self.grace_period)

    def __repr__(self) -> str:
        return f"Subprocess({self.command!r})"


async def _shut_down(
    backend: Backend, process: subprocess.Popen[bytes], grace_period: float
) -> int:
    # Its stdin is closed already (the channel closed it): wait for the exit,
    # then ask it to terminate, then kill it.
    for step in (None, process.terminate, process.kill):
        if step is not None and process.poll() is None:
            try:
                step()
            except ProcessLookupError:
                pass
        with anyio.move_on_after(grace_period):
            await _wait_exit(backend, process)
        if process.poll() is not None:
            return process.returncode
    return process.wait()


async def _wait_exit(backend: Backend, process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is not None:
        try:
            pidfd = pidfd_open(process.pid)
        except OSError:
            pidfd = -1
        if pidfd >= 0:
            # A pidfd becomes readable when the process exits: no polling.
            try:
                while process.poll() is None:
                    await backend.wait_readable(pidfd)
            finally:
                backend.forget_fd(pidfd)
                os.close(pidfd)
            return
    # Kernels without pidfd: no exit event to wait on, so poll.
    while process.poll() is None:  # pragma: no cover  # noqa: ASYNC110
        await anyio.sleep(0.02)
