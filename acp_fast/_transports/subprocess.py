"""A child process as a transport: its stdin and stdout are the connection.

The child is started when the connection opens. When the connection ends the
child is shut down gracefully, in steps: its stdin is closed (an ACP agent
exits when its input ends) while what it still writes to stdout is read and
dropped (so it never blocks on a full pipe or dies of SIGPIPE); after
``grace_period`` seconds it is terminated (SIGTERM), and after another
``grace_period`` killed (SIGKILL). Its stderr is passed through to ours unless
``stderr`` says otherwise.
"""

from __future__ import annotations

import codecs
import logging
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import IO, Any

import anyio

from .._io.backend import Backend
from .._io.channel import Channel, ChannelError
from .._io.fd import FdChannel
from .base import Transport

__all__ = ("Subprocess",)

log = logging.getLogger("acp_fast.transports")

StderrTarget = int | IO[Any] | Callable[[str], object] | None


class Subprocess(Transport):
    """Run ``command`` (an argv list) and talk to it over its stdin/stdout.

    ``env`` replaces the environment (as for ``subprocess.Popen``; pass
    ``{**os.environ, ...}`` to extend it), ``cwd`` sets the directory.

    ``stderr`` says where the child's stderr goes:

    * ``None`` (default): copied into this process's ``sys.stderr`` as it
      comes (a real file or an in-memory stream, as under pytest's
      ``capsys``); its last lines are kept, so that the requests a dying
      child fails say why (docs/semantics.md §1.3);
    * a callable: called with each line the child writes (a ``str`` without
      its newline, decoded as UTF-8), on the event loop. Exceptions it raises
      are logged, never fatal;
    * a file descriptor, a file object, or ``subprocess.DEVNULL``: given to
      ``subprocess.Popen`` as is.

    ``process`` holds the ``subprocess.Popen`` object once started, and
    ``returncode`` the exit status once shut down (negative: the signal that
    ended it, so ``-15`` means it had to be terminated, ``-9`` killed).
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: StderrTarget = None,
        grace_period: float = 2.0,
    ) -> None:
        if isinstance(command, str):
            raise TypeError("command is an argv list, not a string")
        if stderr is subprocess.PIPE or stderr is subprocess.STDOUT:
            raise ValueError("stderr=PIPE/STDOUT is not supported: pass a callable for its lines")
        if grace_period < 0:
            raise ValueError("grace_period must not be negative")
        self.command = list(command)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.stderr = stderr
        self.grace_period = grace_period
        self.process: subprocess.Popen[bytes] | None = None
        self.returncode: int | None = None

    @asynccontextmanager
    async def _open(self, backend: Backend) -> AsyncIterator[Channel]:
        sink, popen_stderr = _stderr_target(self.stderr)
        # fork/exec takes a few milliseconds, once per connection; the pipes
        # it returns are then driven without blocking.
        process = subprocess.Popen(  # noqa: ASYNC220
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=popen_stderr,
            env=self.env,
            cwd=self.cwd,
            bufsize=0,
        )
        self.process = process
        self.returncode = None
        try:
            channel, pump = self._take_pipes(backend, process, sink)
        except BaseException:
            # Out of descriptors, say: the child must not outlive the error.
            process.kill()
            process.wait()
            raise
        if pump is not None:
            pump.start()
        channel.describe_end = lambda: _describe_end(backend, process, pump, self.grace_period)
        try:
            yield channel
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    self.returncode = await _shut_down(backend, process, channel, self.grace_period)
                finally:
                    await channel.aclose()
                    if pump is not None:
                        # Whatever it wrote last, until its stderr ends (a
                        # grandchild may hold it open: bounded).
                        await pump.stop(self.grace_period)

    def _take_pipes(
        self,
        backend: Backend,
        process: subprocess.Popen[bytes],
        sink: Callable[[str], object] | None,
    ) -> tuple[FdChannel, _StderrPump | None]:
        assert process.stdin is not None and process.stdout is not None
        # The channel owns the pipe descriptors from here on (ours alone: the
        # child has its own ends, so making them non-blocking affects no one).
        write_fd = os.dup(process.stdin.fileno())
        process.stdin.close()
        read_fd = os.dup(process.stdout.fileno())
        process.stdout.close()
        pump: _StderrPump | None = None
        if process.stderr is not None:
            assert sink is not None
            stderr_fd = os.dup(process.stderr.fileno())
            process.stderr.close()
            pump = _StderrPump(backend, stderr_fd, sink, lines=self.stderr is not None)
        return FdChannel(backend, read_fd, write_fd, close_fds=True), pump

    def __repr__(self) -> str:
        return f"Subprocess({self.command!r})"


def _stderr_target(stderr: StderrTarget) -> tuple[Callable[[str], object] | None, Any]:
    """(line sink or None, what Popen gets for stderr)."""
    if callable(stderr) and not hasattr(stderr, "fileno"):
        return stderr, subprocess.PIPE
    if stderr is not None:
        return None, stderr
    target = sys.stderr
    if target is None:
        return None, subprocess.DEVNULL
    # Copied into our stderr (a real file, or an in-memory one such as
    # pytest's capsys) rather than handed over: the pump then keeps the last
    # lines, which say why an agent that dies at start-up died.
    with suppress(OSError, ValueError, AttributeError):
        target.flush()  # what we wrote so far comes first
    return _write_to_stderr, subprocess.PIPE


def _write_to_stderr(text: str) -> None:
    target = sys.stderr
    if target is not None:
        target.write(text)
        target.flush()


class _StderrPump:
    """Copies the child's stderr into a sink, without blocking the loop."""

    def __init__(
        self, backend: Backend, fd: int, sink: Callable[[str], object], *, lines: bool
    ) -> None:
        self._backend = backend
        self._fd: int | None = fd
        self._sink = sink
        self._lines = lines  # deliver whole lines (a user callable) or raw text
        self._partial = ""
        self._last = ""  # the end of what it wrote, for describe_end
        self.done = anyio.Event()
        self._scope = anyio.CancelScope()
        self._task: Any = None  # keeps the asyncio task (an asyncio.Task) alive
        os.set_blocking(fd, False)

    def start(self) -> None:
        """Run the pump in a task of its own, outside the caller's scopes.

        A transport's context is entered and left by the connection in
        different cancel scopes (leaving is shielded), so a task group opened
        in it could not be closed in order. A free-standing task has no such
        tie; ``stop()`` ends it.
        """
        if self._backend.name == "trio":
            import trio

            trio.lowlevel.spawn_system_task(self._run_in_scope, name="acp_fast stderr pump")
        else:
            import asyncio  # here, not at the top: import acp_fast stays asyncio-free

            self._task = asyncio.get_running_loop().create_task(self._run_in_scope())

    async def stop(self, grace_period: float) -> None:
        """Let it copy what is left for up to ``grace_period`` s, then end it."""
        with anyio.move_on_after(grace_period):
            await self.done.wait()
        self._scope.cancel()
        await self.done.wait()
        fd, self._fd = self._fd, None
        if fd is not None:
            self._backend.forget_fd(fd)
            os.close(fd)

    async def _run_in_scope(self) -> None:
        with self._scope:
            try:
                await self._run()
            except Exception:  # never let a free-standing task fail
                log.exception("copying a subprocess's stderr failed")
        self.done.set()

    async def _run(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        try:
            while self._fd is not None:
                try:
                    data = os.read(self._fd, 65536)
                except BlockingIOError:
                    await self._backend.wait_readable(self._fd)
                    continue
                except OSError:
                    break
                if not data:
                    break
                self._deliver(decoder.decode(data))
            self._deliver(decoder.decode(b"", final=True))
        finally:
            if self._partial:
                self._emit(self._partial)
                self._partial = ""

    def last_lines(self, count: int = 10) -> list[str]:
        """The last lines the child wrote to stderr (each at most 500 chars)."""
        return [line[-500:] for line in self._last.splitlines()[-count:] if line.strip()]

    def _deliver(self, text: str) -> None:
        if not text:
            return
        self._last = (self._last + text)[-_KEPT_STDERR:]
        if not self._lines:
            self._emit(text)
            return
        *complete, self._partial = (self._partial + text).split("\n")
        for line in complete:
            self._emit(line)

    def _emit(self, text: str) -> None:
        try:
            self._sink(text)
        except Exception:
            log.exception("the stderr callback of a subprocess transport failed")


_KEPT_STDERR = 4096


async def _describe_end(
    backend: Backend, process: subprocess.Popen[bytes], pump: _StderrPump | None, grace: float
) -> dict[str, Any]:
    """How the child ended, for the error of the requests its EOF fails
    (docs/transports.md): exit status or signal, and its last stderr lines.
    Waits for the exit a moment (bounded: it may still run)."""
    with anyio.move_on_after(min(grace, 1.0)):
        await _wait_exit(backend, process)
        if pump is not None:
            await pump.done.wait()  # what it wrote last, up to its stderr's end
    details: dict[str, Any] = {"pid": process.pid}
    code = process.poll()
    if code is None:
        details["running"] = True  # it closed its stdout but lives on
    elif code < 0:
        details["exitStatus"] = code
        try:
            details["signal"] = signal.Signals(-code).name
        except ValueError:
            details["signal"] = -code
    else:
        details["exitStatus"] = code
    if pump is not None:
        details["stderr"] = pump.last_lines()
    return details


async def _shut_down(
    backend: Backend, process: subprocess.Popen[bytes], channel: FdChannel, grace_period: float
) -> int:
    """Close its stdin, then wait, terminate, kill; returns its exit status."""
    channel._close_output()  # stdin ends: an ACP agent exits on EOF

    async def discard_output() -> None:
        # Keep reading its stdout, so that a child writing on its way out
        # neither blocks on a full pipe nor dies of SIGPIPE.
        with suppress(ChannelError, OSError):
            while await channel.receive():
                pass

    async with anyio.create_task_group() as group:
        group.start_soon(discard_output)
        for step in (None, process.terminate, process.kill):
            if step is not None and process.poll() is None:
                with suppress(ProcessLookupError):
                    step()
            with anyio.move_on_after(grace_period if step is not process.kill else None):
                await _wait_exit(backend, process)
            if process.poll() is not None:
                break
        group.cancel_scope.cancel()
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
