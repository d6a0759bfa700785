"""``PermissionBroker``: a client's answers to ``session/request_permission``.

::

    broker = PermissionBroker(ask=show_dialog, policy=allow_reads)

    class Editor(acp.BaseClient):
        async def request_permission(self, request):
            return await broker.decide(request)

A request is answered, in this order, by a remembered choice (the user once
picked an ``allow_always`` / ``reject_always`` option for this kind of tool
call), by the ``policy`` (a function returning an option id, or None to
pass), or by ``ask`` (the user; None means they dismissed it). ``cancel``
answers the session's pending questions with the ``cancelled`` outcome, as
the protocol asks once a turn is cancelled; ``AgentConnection.cancel`` and a
``$/cancel_request`` from the agent do the same through the class API.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

import anyio

from .. import helpers as h
from ..schema import v1

__all__ = ("PermissionBroker",)

Chooser = Callable[[v1.RequestPermissionRequest], "str | None | Awaitable[str | None]"]


def remember_key(request: v1.RequestPermissionRequest) -> str:
    """What a remembered choice applies to: the tool kind, else its title."""
    call = request.tool_call
    if isinstance(call.kind, str):
        return f"kind:{call.kind}"
    if isinstance(call.title, str):
        return f"title:{call.title}"
    return f"id:{call.tool_call_id}"


class PermissionBroker:
    """Policy, remembered choices, the user, and cancellation, in one place."""

    def __init__(self, ask: Chooser | None = None, *, policy: Chooser | None = None) -> None:
        self.ask = ask
        self.policy = policy
        #: remember_key(request) -> "allow" or "reject" (from an "always" choice).
        self.remembered: dict[str, str] = {}
        self._pending: dict[str, set[anyio.CancelScope]] = {}

    async def decide(self, request: v1.RequestPermissionRequest) -> v1.RequestPermissionResponse:
        """The answer to one permission request."""
        options = {option.option_id: option for option in request.options}
        key = remember_key(request)
        verdict = self.remembered.get(key)
        if verdict is not None:
            for option in request.options:
                if option.kind.startswith(verdict):
                    return h.permission_selected(option.option_id)
        scope = anyio.CancelScope()
        self._pending.setdefault(request.session_id, set()).add(scope)
        chosen: str | None = None
        try:
            with scope:
                for chooser in (self.policy, self.ask):
                    if chooser is None:
                        continue
                    answer = chooser(request)
                    if inspect.isawaitable(answer):
                        answer = await answer
                    if answer is not None:
                        chosen = answer
                        break
        finally:
            pending = self._pending.get(request.session_id)
            if pending is not None:
                pending.discard(scope)
                if not pending:
                    del self._pending[request.session_id]
        if chosen is None or chosen not in options:
            return h.permission_cancelled()
        kind = options[chosen].kind
        if kind.endswith("_always"):
            self.remembered[key] = kind.split("_", 1)[0]
        return h.permission_selected(chosen)

    def cancel(self, session_id: str) -> None:
        """The session's turn was cancelled: its pending questions answer
        ``cancelled``."""
        for scope in self._pending.pop(session_id, ()):
            scope.cancel()

    def forget(self, key: str | None = None) -> None:
        """Drop one remembered choice (a ``remember_key``), or all of them."""
        if key is None:
            self.remembered.clear()
        else:
            self.remembered.pop(key, None)

    def __repr__(self) -> str:
        return f"<PermissionBroker remembered={self.remembered!r}>"
