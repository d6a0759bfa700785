"""The conductor: a chain of proxies in front of an agent, as one agent.

Structure (docs/semantics.md §5.7): one connection to the client (the
editor), on which the conductor is the agent; one connection per proxy, on
which it is the proxy's conductor (role ``ConductorToProxy``); one connection
to the agent, on which it is the client. Component *i* is proxy *i*, and
component *n* (after the *n* proxies) is the agent.

Every message that arrives is routed one hop, in one of two directions:

* **left to right** (towards the agent): what the client sends, and what
  proxy *i* sends in ``_proxy/successor`` envelopes, goes to component *i+1*:
  plainly to a proxy, as is to the agent. ``initialize`` becomes
  ``_proxy/initialize`` for a proxy;
* **right to left** (towards the client): what the agent or proxy *i* sends
  plainly goes to its predecessor: the client, or proxy *i-1* wrapped in a
  ``_proxy/successor`` envelope.

Requests are re-issued under the next connection's own id and answered with
whatever comes back (``forward_response_to``), so a ``$/cancel_request``
from the sender is translated into one for the new id, hop by hop; the raw
notification itself is dropped, as its id means nothing on the next
connection (§5.1, §5.3). Each endpoint therefore sees exactly one
``$/cancel_request`` per cancelled request, carrying its own id.

Routing happens in each connection's dispatch loop and every send is a
synchronous append to the target's outgoing FIFO, so messages from one
source keep their order without a central routing task. A handler waits
(and so stops its connection from reading) only when the target holds more
than about 1 MiB unwritten: the backpressure that bounds memory.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeAlias

import anyio
import anyio.abc

from .._async.builder import Builder
from .._async.connection import ConnectionTo
from .._async.messages import (
    PROXY_INITIALIZE_METHOD,
    NotificationDispatch,
    RequestDispatch,
    decode_params,
    wire_params,
)
from .._async.responder import Responder
from .._async.roles import INITIALIZE_METHOD, Agent, Client, ConductorToProxy, Role, pace
from .._async.trace import HopRecorder, TraceSink, TraceWriter
from .._errors import Error
from .._transports import Subprocess, Transport
from .._transports.memory import memory_pair
from ._hangup import watch_hangup, watched_input

__all__ = ("Component", "Conductor", "run_conductor")

log = logging.getLogger("acp_fast.conductor")

# Unwritten bytes towards the next hop above which forwarding waits for them.
_FORWARD_WINDOW = 128 * 1024
# Unanswered requests forwarded to one hop above which forwarding waits.
_FORWARD_REQUESTS = 1024

Component: TypeAlias = Sequence[str] | Transport | Builder[Any]
"""A link of the chain: an argv list (run as a subprocess), a transport to
an already running component, or a builder run in this process."""


class Conductor:
    """Runs ``proxies`` in front of ``agent`` and serves them as one agent.

    Each component is an argv list (started with ``acp.Subprocess``; its
    stderr is passed through), any ``acp.Transport`` to a running component,
    or an ``acp.Builder`` (``acp.Proxy.builder()`` / ``acp.Agent.builder()``)
    served in this process over an in-memory link, which is handy in tests::

        conductor = Conductor(
            proxies=[["acp-fast", "example-proxy"]],
            agent=["acp-fast", "example-agent"],
        )
        await conductor.serve(acp.stdio())

    A Conductor describes a chain; every ``serve`` starts it afresh.
    """

    def __init__(
        self,
        *,
        proxies: Sequence[Component] = (),
        agent: Component,
        name: str = "conductor",
        grace_period: float = 2.0,
        trace: TraceSink | None = None,
    ) -> None:
        self.proxies = [_checked(component) for component in proxies]
        self.agent = _checked(agent)
        self.name = name
        self.grace_period = grace_period
        # Where each run records every hop (docs/tracing.md), if anywhere.
        self.trace = trace

    async def serve(self, transport: Transport) -> None:
        """Start the components, then serve the client on ``transport``.

        Returns when the client's output ends. The components are shut down
        first (their input is closed, subprocesses are waited for), so that
        the client's requests still pending in the chain are answered with
        the failure before the client's connection closes.

        When the client's input is a pipe or a socket (``acp.stdio()``, an
        ``acp.FdTransport``) and the client closes it while a component that
        never reads holds the chain back (so its EOF is never read), the
        chain is shut down a grace period later, each component process in
        stages (docs/proxies.md), and this returns.

        Raises ``acp.Error`` when a component ended its connection (or
        failed) first; the client's transport is closed then too. Raises
        ``OSError`` when a component command cannot be started.
        """
        fd = watched_input(transport)
        if fd is None:
            await _Chain(self).serve(transport)
            return
        failure: Exception | None = None
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(watch_hangup, scope, fd, self.grace_period)
                try:
                    await _Chain(self).serve(transport)
                except Exception as exc:
                    # Raised after the group, not wrapped in an ExceptionGroup.
                    failure = exc
                finally:
                    group.cancel_scope.cancel()
        if failure is not None:
            raise failure

    def __repr__(self) -> str:
        return f"Conductor(proxies={self.proxies!r}, agent={self.agent!r})"


def _checked(component: Component) -> Component:
    if isinstance(component, Builder | Transport):
        return component
    if isinstance(component, str):
        raise TypeError(
            f"a component command is an argv list, not a string: {component!r} "
            "(split it with shlex.split)"
        )
    command = list(component)
    if not command or not all(isinstance(part, str) for part in command):
        raise TypeError(f"not a component (argv list, Transport or Builder): {component!r}")
    return command


class _Chain:
    """One run of a conductor: its connections and the routing between them."""

    def __init__(self, conductor: Conductor) -> None:
        self.conductor = conductor
        self.components: list[Component] = [*conductor.proxies, conductor.agent]
        self.proxy_count = len(conductor.proxies)
        # links[i]: the connection to component i (proxy i, or the agent at n).
        self.links: list[ConnectionTo[Any] | None] = [None] * len(self.components)
        self.client: ConnectionTo[Any] | None = None
        # Set once every connection exists; routing waits for it before that.
        self.ready = anyio.Event()
        self.stopping = anyio.Event()
        # links_closed[i]: the connection to component i was closed.
        self.links_closed = [anyio.Event() for _ in self.components]
        self.ended: str | None = None
        self.trace: TraceWriter | None = None

    def label(self, index: int) -> str:
        return f"proxy {index}" if index < self.proxy_count else "agent"

    def stop(self, reason: str | None = None) -> None:
        """End the run; ``reason`` says why, when it ends before the client."""
        if reason is not None and not self.stopping.is_set():
            self.ended = reason
        self.stopping.set()

    def traced(self, builder: Builder[Any], hop: str, peer: str) -> Builder[Any]:
        if self.trace is not None:
            builder.observe(HopRecorder(self.trace, hop, "Conductor", peer))
        return builder

    async def serve(self, transport: Transport) -> None:
        if self.conductor.trace is not None:
            self.trace = TraceWriter(self.conductor.trace)
        try:
            await self._serve(transport)
        finally:
            if self.trace is not None:
                self.trace.close()

    async def _serve(self, transport: Transport) -> None:
        failure: Exception | None = None
        async with anyio.create_task_group() as group:
            try:
                # The agent first, then the proxies from right to left, so
                # that a component's successor is connected before it.
                for index in reversed(range(len(self.components))):
                    await group.start(self._run_link, index, self._transport_for(index, group))
                await self._client_builder().connect_with(transport, self._serve_client)
            except Exception as exc:
                # Raised after the group, not wrapped in an ExceptionGroup.
                failure = exc
            finally:
                self.stop()
        if failure is not None:
            raise failure
        if self.ended is not None:
            raise Error.internal_error(self.ended)

    async def _serve_client(self, cx: ConnectionTo[Any]) -> None:
        self.client = cx
        self.ready.set()
        await _first_of(cx.incoming_closed, self.stopping.wait)
        # The components go first: closing a link answers the client's
        # requests still pending there (with the failure), and those answers
        # must go out before the client's connection closes.
        self.stop()
        for closed in self.links_closed:
            await closed.wait()

    def _transport_for(self, index: int, group: anyio.abc.TaskGroup) -> Transport:
        component = self.components[index]
        if isinstance(component, Transport):
            return component
        if isinstance(component, Builder):
            ours, theirs = memory_pair()
            group.start_soon(self._run_in_process, index, component, theirs)
            return ours
        return Subprocess(component, grace_period=self.conductor.grace_period)

    async def _run_in_process(self, index: int, component: Builder[Any], theirs: Transport) -> None:
        # Served until the conductor closes its link (the component reads EOF).
        try:
            await component.connect_to(theirs)
        except Exception as exc:
            self.stop(f"{self.label(index)} failed: {exc!r}")

    async def _run_link(
        self,
        index: int,
        transport: Transport,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        started = False
        try:
            async with self._link_builder(index).connect(transport) as cx:
                self.links[index] = cx
                task_status.started()
                started = True
                await _first_of(cx.incoming_closed, self.stopping.wait)
                if not self.stopping.is_set():
                    # A component that went away first ends the chain; say
                    # how, when its transport knows (docs/semantics.md §1.3).
                    self.stop(f"{self.label(index)} ended its connection{await _how(cx)}")
        except Exception as exc:
            if not started:
                raise  # serve() reports it: the chain never started
            self.stop(f"{self.label(index)} failed: {exc!r}")
        finally:
            self.links_closed[index].set()

    # -- the connections' handlers ------------------------------------------

    def _client_builder(self) -> Builder[Any]:
        async def request(message: Any, responder: Responder[Any], cx: Any) -> None:
            await self._to_component(0, RequestDispatch(message, responder))

        async def notification(message: Any, cx: Any) -> None:
            await self._to_component(0, NotificationDispatch(message))

        return self.traced(
            Agent.builder()
            .name(self.conductor.name)
            .on_receive_request(request)
            .on_receive_notification(notification),
            "client",
            "Client",
        )

    def _link_builder(self, index: int) -> Builder[Any]:
        name = f"{self.conductor.name}→{self.label(index)}"

        async def leftward_request(message: Any, responder: Responder[Any], cx: Any) -> None:
            await self._to_predecessor_of(index, RequestDispatch(message, responder))

        async def leftward_notification(message: Any, cx: Any) -> None:
            await self._to_predecessor_of(index, NotificationDispatch(message))

        if index == self.proxy_count:
            # The agent: everything it sends goes towards the client.
            return self.traced(
                Client.builder()
                .name(name)
                .on_receive_request(leftward_request)
                .on_receive_notification(leftward_notification),
                "agent",
                "Agent",
            )

        async def rightward_request(message: Any, responder: Responder[Any], cx: Any) -> None:
            await self._to_component(index + 1, RequestDispatch(message, responder))

        async def rightward_notification(message: Any, cx: Any) -> None:
            await self._to_component(index + 1, NotificationDispatch(message))

        # A proxy: what it wraps for its agent side goes right (unwrapped by
        # the peer=Agent handlers), what it sends plainly goes left.
        return self.traced(
            ConductorToProxy.builder()
            .name(name)
            .on_receive_request(rightward_request, peer=Agent)
            .on_receive_notification(rightward_notification, peer=Agent)
            .on_receive_request(leftward_request, peer=Client)
            .on_receive_notification(leftward_notification, peer=Client),
            f"proxy:{index}",
            f"Proxy({index})",
        )

    # -- routing ----------------------------------------------------------------

    async def _to_component(self, index: int, dispatch: Any) -> None:
        """Left to right: deliver ``dispatch`` to component ``index``."""
        if not self.ready.is_set():
            await self.ready.wait()
        link = self.links[index]
        assert link is not None
        is_proxy = index < self.proxy_count
        if isinstance(dispatch, RequestDispatch):
            method = dispatch.message.method
            responder = dispatch.responder
            if method == PROXY_INITIALIZE_METHOD:
                responder.respond_with_error(
                    Error.invalid_request(
                        f"`{PROXY_INITIALIZE_METHOD}` is sent by the conductor only"
                    )
                )
                return
            if method == INITIALIZE_METHOD and is_proxy:
                # A proxy learns it is one from `_proxy/initialize`, which
                # carries the same params. The reference forwards the
                # rewritten request with forward_cancellation_from plus a
                # result callback because its request and response types
                # change (§5.7); untyped here, forward_response_to is that
                # same pair (one cancel with the proxy's id, the answer
                # relayed), keeps the answer's bytes, and still answers when
                # the chain stops with the request pending, where a callback
                # would no longer run.
                rewritten = decode_params(
                    None, PROXY_INITIALIZE_METHOD, wire_params(dispatch.message)
                )
                await _deliver(link, Client, RequestDispatch(rewritten, responder))
                return
        # Into a proxy from its client side (plainly), or into the agent. A
        # raw $/cancel_request is dropped here: the cancelled request's own
        # forwarding already sent one with the new id.
        await _deliver(link, Client if is_proxy else Agent, dispatch)

    async def _to_predecessor_of(self, index: int, dispatch: Any) -> None:
        """Right to left: deliver what component ``index`` sent to its predecessor."""
        if not self.ready.is_set():
            await self.ready.wait()
        peer: type[Role]
        if index == 0:
            target, peer = self.client, Client
        else:
            # Into proxy index-1 from its agent side: wrapped.
            target, peer = self.links[index - 1], Agent
        assert target is not None
        await _deliver(target, peer, dispatch)


async def _deliver(target: ConnectionTo[Any], peer: type[Role], dispatch: Any) -> None:
    """Forward ``dispatch`` one hop to ``peer`` on ``target`` (§5.3)."""
    try:
        target.send_proxied_message_to(peer, dispatch)
    except Error as exc:
        # The target's connection is no longer running (the chain is
        # stopping): a request is answered with that, a notification dropped.
        if isinstance(dispatch, RequestDispatch):
            if not dispatch.responder.answered:
                dispatch.responder.respond_with_error(exc)
        else:
            log.debug("dropped a notification for %r: %s", target, exc)
        return
    if isinstance(dispatch, RequestDispatch):
        # Each forwarded request keeps state here until its answer (about a
        # kilobyte): the hop takes requests in smaller steps than the 1 MiB
        # of pace, and at most _FORWARD_REQUESTS unanswered, so that a fast
        # client before a slower agent cannot pile up thousands of them
        # (docs/semantics.md §2.4, output backpressure).
        if target._channel.pending > _FORWARD_WINDOW:
            await target._drain()
        while target._table.outgoing_count > _FORWARD_REQUESTS:  # noqa: ASYNC110
            # No event marks one answer among thousands; a flood is the only
            # way here, and a short wait costs it nothing.
            await anyio.sleep(0.0005)
    await pace(target)


async def _first_of(*waits: Callable[[], Awaitable[object]]) -> None:
    """Return as soon as one of ``waits()`` returns."""
    async with anyio.create_task_group() as group:

        async def run(wait: Callable[[], Awaitable[object]]) -> None:
            await wait()
            group.cancel_scope.cancel()

        for wait in waits:
            group.start_soon(run, wait)


def _agent_component(agent_command: str) -> Component:
    """A command line, or the URL of an agent served remotely (docs/remote.md)."""
    from .._transports.remote.urls import is_remote_url, transport_for_url

    if is_remote_url(agent_command):
        return transport_for_url(agent_command)
    return shlex.split(agent_command)


def run_conductor(
    proxy_commands: Sequence[str],
    agent_command: str,
    *,
    backend: str = "asyncio",
    trace: str | None = None,
) -> int:
    """``acp-fast conductor``: serve the chain on stdio; the exit status."""
    import sys

    if not all(command.strip() for command in (*proxy_commands, agent_command)):
        print("acp-fast conductor: a --proxy or --agent command is empty", file=sys.stderr)
        return 2
    try:
        conductor = Conductor(
            proxies=[shlex.split(command) for command in proxy_commands],
            agent=_agent_component(agent_command),
            trace=trace,
        )
    except (TypeError, ValueError) as exc:
        print(f"acp-fast conductor: {exc}", file=sys.stderr)
        return 2
    if trace is not None:
        # Each run truncates the trace (docs/tracing.md): an unwritable path
        # is reported here, before any component starts.
        try:
            open(trace, "wb").close()
        except OSError as exc:
            print(f"acp-fast conductor: cannot write the trace: {exc}", file=sys.stderr)
            return 2
    from .._transports import stdio
    from ._stdio import serve_until_client_ends

    async def serve() -> int | None:
        return await serve_until_client_ends(lambda: conductor.serve(stdio()))

    try:
        signum = anyio.run(serve, backend=backend)
    except OSError as exc:
        print(f"acp-fast conductor: cannot start a component: {exc}", file=sys.stderr)
        return 2
    except Error as exc:
        print(f"acp-fast conductor: {exc.data or exc.message}", file=sys.stderr)
        return 1
    return 0 if signum is None else 128 + signum  # the shell's convention


async def _how(cx: ConnectionTo[Any]) -> str:
    """``: <how it ended>`` for a link whose transport tells (a remote link
    that broke, a process's exit status), else nothing."""
    details = await cx._end_details() or {}
    if details.get("transport"):
        return f": {details['transport']}"
    if "exitStatus" in details:
        return f" (exit status {details['exitStatus']})"
    return ""
