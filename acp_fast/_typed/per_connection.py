"""Attributes of a class-based agent or client whose value is per connection.

One agent instance may serve several peers at once (a listener serving one
builder, docs/transports.md). Its ``self.client`` must then be the client of
the request being handled, never the last peer that connected. A
``PerConnection`` attribute is set by the SDK when a connection is bound and
read through a context variable: each connection's handlers, and every task
they start, see their own connection's value. Outside any handler the value
is the one live connection's; with several live, reading it raises, since no
answer would be right.
"""

from __future__ import annotations

import contextvars
from typing import Any, Generic, TypeVar, overload

__all__ = ("PerConnection",)

T = TypeVar("T")


class PerConnection(Generic[T]):
    """A descriptor: one value per connection of the instance."""

    def __init__(self, what: str) -> None:
        self._what = what
        self._name = "value"
        self._var: contextvars.ContextVar[tuple[object, Any]] = contextvars.ContextVar(what)

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name
        self._var = contextvars.ContextVar(f"acp_fast.{owner.__qualname__}.{name}")

    @overload
    def __get__(self, instance: None, owner: type) -> PerConnection[T]: ...

    @overload
    def __get__(self, instance: object, owner: type) -> T: ...

    def __get__(self, instance: object | None, owner: type) -> PerConnection[T] | T:
        if instance is None:
            return self
        current = self._var.get(None)
        if current is not None and current[0] is instance:
            value: T = current[1]
            return value
        live = [v for v in self._values(instance) if _is_live(v)]
        if len(live) == 1:
            return live[0]
        name = f"{type(instance).__name__}.{self._name}"
        if not live:
            raise AttributeError(f"{name}: not connected yet ({self._what} is set on connection)")
        raise RuntimeError(
            f"{name} is read outside a handler while {len(live)} connections are served: "
            f"inside a handler (and the tasks it starts) it is that connection's {self._what}; "
            "elsewhere keep the value you read in a handler (docs/transports.md)"
        )

    def __set__(self, instance: object, value: T) -> None:
        # Called by the SDK in the connection's dispatch task: its handlers
        # and the tasks they spawn inherit the variable.
        self._var.set((instance, value))
        values = self._values(instance)
        values[:] = [v for v in values if _is_live(v) and _cx(v) is not _cx(value)]
        values.append(value)

    def _values(self, instance: object) -> list[T]:
        store: dict[str, list[T]] = instance.__dict__.setdefault("_acp_per_connection", {})
        return store.setdefault(self._name, [])


def _cx(value: object) -> object:
    return getattr(value, "cx", value)


def _is_live(value: object) -> bool:
    # A connection that ended no longer counts (a listener serving peers one
    # after another has one live connection at a time).
    return bool(getattr(_cx(value), "_running", True))
