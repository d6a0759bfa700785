"""Handler entries: which incoming messages a callback claims, and from whom.

A connection offers each incoming entry to its handlers in registration
order (docs/semantics.md §2.2). An entry is matched by kind (request,
notification, or any for dispatch handlers), by method (a schema class's
``METHOD``, a method name, or every method), and by peer:

* COUNTERPART (no ``peer=``): every message, ``_proxy/successor`` envelopes
  included and not unwrapped;
* PREDECESSOR (a proxy's client side): messages that are not envelopes;
* SUCCESSOR (a proxy's agent side): envelopes only, unwrapped for the
  callback (and re-wrapped if it declines with a modified message).
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from .._core import NOTIFICATION, REQUEST
from .messages import SUCCESSOR_METHOD, UntypedMessage, decode_params

if TYPE_CHECKING:
    from .roles import Role

__all__ = ("DISPATCH", "NOTIFICATION", "REQUEST", "HandlerEntry", "PeerStyle", "peer_style_for")

DISPATCH: Final = 7  # a handler for every kind of entry


class PeerStyle(enum.Enum):
    COUNTERPART = "counterpart"
    PREDECESSOR = "predecessor"
    SUCCESSOR = "successor"


# Module-level aliases for the per-message paths: on Python 3.11 reading an
# enum member off its class costs ~170 ns, a module global ~45 ns.
_SUCCESSOR: Final = PeerStyle.SUCCESSOR
_PREDECESSOR: Final = PeerStyle.PREDECESSOR


def peer_style_for(role: Role, peer: Any) -> PeerStyle:
    """How ``role`` talks to ``peer`` (a role class such as ``acp.Agent``)."""
    style = role.peers.get(peer)
    if style is None:
        names = ", ".join(p.__name__ for p in role.peers)
        raise ValueError(
            f"{getattr(peer, '__name__', peer)!r} is not a peer of a {type(role).__name__} "
            f"connection (its peers: {names})"
        )
    return style


class HandlerEntry:
    """One handler: a callback and what it claims."""

    __slots__ = ("active", "callback", "kind", "message_type", "method", "peer_style")

    def __init__(
        self,
        kind: int,
        callback: Callable[..., Awaitable[Any]],
        message_type: type | None = None,
        method: str | None = None,
        peer_style: PeerStyle = PeerStyle.COUNTERPART,
    ) -> None:
        self.kind = kind
        self.callback = callback
        self.message_type = message_type
        self.method = method
        self.peer_style = peer_style
        self.active = True

    @classmethod
    def create(
        cls,
        kind: int,
        callback: Callable[..., Any],
        message_type: type | str | None = None,
        peer_style: PeerStyle = PeerStyle.COUNTERPART,
    ) -> HandlerEntry:
        """Build an entry from what a builder method was given."""
        if isinstance(message_type, str):
            return cls(kind, callback, None, message_type, peer_style)
        if message_type is None or message_type is UntypedMessage:
            return cls(kind, callback, None, None, peer_style)
        method = getattr(message_type, "METHOD", None)
        if type(method) is not str:
            raise TypeError(
                f"{message_type!r} is not an ACP message class (no METHOD); pass a class "
                "from acp_fast.schema, a method name, or nothing"
            )
        return cls(kind, callback, message_type, method, peer_style)

    @classmethod
    def request(
        cls, callback: Callable[..., Any], message_type: type | str | None = None
    ) -> HandlerEntry:
        """A request handler for ``cx.add_dynamic_handler``."""
        return cls.create(REQUEST, as_async(callback), message_type)

    @classmethod
    def notification(
        cls, callback: Callable[..., Any], message_type: type | str | None = None
    ) -> HandlerEntry:
        """A notification handler for ``cx.add_dynamic_handler``."""
        return cls.create(NOTIFICATION, as_async(callback), message_type)

    @classmethod
    def dispatch(
        cls, callback: Callable[..., Any], message_type: type | str | None = None
    ) -> HandlerEntry:
        """A dispatch handler for ``cx.add_dynamic_handler``."""
        return cls.create(DISPATCH, as_async(callback), message_type)

    @property
    def unwraps(self) -> bool:
        return self.peer_style is _SUCCESSOR

    def matches(self, kind: int, method: str, inner_method: str | None) -> bool:
        if self.kind != DISPATCH and self.kind != kind:
            return False
        style = self.peer_style
        if style is _SUCCESSOR:
            if inner_method is None:
                return False
            method = inner_method
        elif style is _PREDECESSOR and method == SUCCESSOR_METHOD:
            return False
        return self.method is None or self.method == method

    def message(self, method: str, params: Any, inner: tuple[str, Any] | None) -> Any:
        """The message object this handler's callback receives."""
        if inner is not None and self.peer_style is _SUCCESSOR:
            method, params = inner
        return decode_params(self.message_type, method, params)

    def __repr__(self) -> str:
        kind = {REQUEST: "request", NOTIFICATION: "notification", DISPATCH: "dispatch"}[self.kind]
        return f"<HandlerEntry {kind} {self.method or '*'} {self.peer_style.value}>"


def as_async(callback: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    """``callback`` as an async function (a plain function is wrapped)."""
    if inspect.iscoroutinefunction(callback):
        return callback

    async def call(*args: Any) -> Any:
        result = callback(*args)
        if inspect.isawaitable(result):
            result = await result
        return result

    call.__qualname__ = getattr(callback, "__qualname__", repr(callback))
    return call
