"""The cancellation marker of an incoming request (docs/semantics.md §4.3).

A peer cancels a request it sent us with ``$/cancel_request``. The dispatch
loop records that in the connection's registry *before* any handler sees the
notification (§4.5), and fires the request's marker if one was handed out.
Handlers observe it through ``responder.cancellation()``:

* ``is_cancelled()``;
* ``await cancelled()``, which returns once the request is cancelled (and
  never returns otherwise);
* ``await run_until_cancelled(work)``, which runs ``work`` unless the request
  is already cancelled, and stops it if cancellation comes first.

The SDK never answers a cancelled request by itself: the handler decides
(stop and answer -32800, answer with partial results, or ignore it).

Markers also feed outgoing requests: ``sent.forward_cancellation_from(marker)``
registers a callback that cancels the downstream request when the marker fires.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

from .._errors import Error

__all__ = ("RequestCancellation",)

T = TypeVar("T")


class MarkerState:
    """The shared state behind every RequestCancellation handle of a request."""

    __slots__ = ("_callbacks", "_event", "fired")

    def __init__(self, fired: bool = False) -> None:
        self.fired = fired
        self._event: anyio.Event | None = None
        self._callbacks: list[Callable[[], object]] = []

    def fire(self) -> None:
        """Record the cancellation; idempotent."""
        if self.fired:
            return
        self.fired = True
        if self._event is not None:
            self._event.set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def add_callback(self, callback: Callable[[], object]) -> None:
        self._callbacks.append(callback)

    def remove_callback(self, callback: Callable[[], object]) -> None:
        try:
            self._callbacks.remove(callback)
        except ValueError:
            pass

    async def wait(self) -> None:
        if self.fired:
            return
        if self._event is None:
            self._event = anyio.Event()
        await self._event.wait()


class RequestCancellation:
    """Whether the peer cancelled an incoming request, and ways to react.

    Get one with ``responder.cancellation()``. Every handle of the same
    request shares one state. A handle taken after the request was answered
    (or from a request whose id the peer reused) is detached: it never fires.
    """

    __slots__ = ("_state",)

    def __init__(self, state: MarkerState | None = None) -> None:
        self._state = state if state is not None else MarkerState()

    def is_cancelled(self) -> bool:
        """True once the peer's ``$/cancel_request`` for this request arrived."""
        return self._state.fired

    async def cancelled(self) -> None:
        """Return when the request is cancelled; wait forever otherwise."""
        await self._state.wait()

    async def run_until_cancelled(
        self, work: Callable[..., Awaitable[T]] | Awaitable[T], *args: Any
    ) -> T:
        """Run ``work(*args)`` and return its value, unless cancelled first.

        ``work`` is an async function (preferred: nothing is started when the
        request is already cancelled) or an awaitable. If the request is
        cancelled before the work finishes, the work is cancelled at its
        current await and ``acp.Error`` -32800 is raised. If both happen in
        the same step, the work's value wins.
        """
        state = self._state
        if state.fired:
            if inspect.iscoroutine(work):
                work.close()
            raise Error.request_cancelled()
        with anyio.CancelScope() as scope:
            state.add_callback(scope.cancel)
            try:
                if callable(work):
                    return await work(*args)
                return await work
            finally:
                state.remove_callback(scope.cancel)
        # Only reached when our scope caught the cancellation we asked for.
        raise Error.request_cancelled()

    def _watch(self, callback: Callable[[], object]) -> bool:
        """Call ``callback`` when cancelled; True if it is cancelled already."""
        if self._state.fired:
            return True
        self._state.add_callback(callback)
        return False

    def _unwatch(self, callback: Callable[[], object]) -> None:
        self._state.remove_callback(callback)

    def __repr__(self) -> str:
        return f"<RequestCancellation cancelled={self._state.fired}>"
