"""What handlers receive and what senders pass: messages and dispatches.

Two kinds of message objects travel through the API:

* typed messages: instances of the generated classes in ``acp_fast.schema``
  (``v1.InitializeRequest`` ...). The class knows its wire method
  (``METHOD``) and, for requests, its response class (``RESPONSE``);
* ``UntypedMessage(method, params)`` for anything the schema lacks
  (extension methods, a newer protocol) and for catch-all handlers.

Incoming params and results stay raw JSON (``msgspec.Raw``) until something
asks for them, and are decoded once, straight into the class that asks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

import msgspec

from .._core import MISSING
from .._errors import Error
from ..schema import _codec as schema_codec
from . import _wire

if TYPE_CHECKING:
    from .requests import ResponseRouter
    from .responder import Responder

__all__ = (
    "CANCEL_REQUEST_METHOD",
    "NOT_HANDLED",
    "SUCCESSOR_METHOD",
    "Dispatch",
    "NotHandled",
    "NotificationDispatch",
    "RequestDispatch",
    "ResponseDispatch",
    "UntypedMessage",
    "is_cancel_request_notification",
)

T = TypeVar("T")

CANCEL_REQUEST_METHOD: Final = "$/cancel_request"
SUCCESSOR_METHOD: Final = "_proxy/successor"
PROXY_INITIALIZE_METHOD: Final = "_proxy/initialize"


class UntypedMessage:
    """A request or notification by method name, with plain JSON params.

    ``params`` is a dict, a list or None (no params). Incoming untyped
    messages decode their params on first access; a message forwarded without
    being looked at is written out byte for byte as it came in.
    """

    __slots__ = ("_params", "_raw", "method")

    def __init__(self, method: str, params: Any = None) -> None:
        self.method = method
        self._params = params
        self._raw: Any = MISSING

    @classmethod
    def _from_raw(cls, method: str, raw: Any) -> UntypedMessage:
        # __new__ and the slots, not cls(method): no __init__ frame (per message)
        message = cls.__new__(cls)
        message.method = method
        message._params = None
        message._raw = raw
        return message

    @property
    def params(self) -> Any:
        raw = self._raw
        if raw is not MISSING:
            self._params = _wire.loads(raw)
            self._raw = MISSING
        return self._params

    @params.setter
    def params(self, value: Any) -> None:
        self._raw = MISSING
        self._params = value

    def _wire_params(self) -> Any:
        return self._raw if self._raw is not MISSING else self._params

    def __repr__(self) -> str:
        return f"UntypedMessage(method={self.method!r}, params={self.params!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, UntypedMessage):
            return NotImplemented
        return (self.method, self.params) == (other.method, other.params)

    __hash__ = None  # type: ignore[assignment]


def method_of(message: object) -> str:
    """The wire method of a typed or untyped message."""
    if type(message) is UntypedMessage:
        return message.method
    method = getattr(type(message), "METHOD", None)
    if type(method) is not str:
        raise TypeError(
            f"{type(message).__name__} is not an ACP message: use a class from "
            "acp_fast.schema or acp_fast.UntypedMessage(method, params)"
        )
    return method


def wire_params(message: object) -> Any:
    """What to write as a message's params (None: no params key)."""
    if type(message) is UntypedMessage:
        return message._wire_params()
    return message


def response_type_of(message: object) -> type | None:
    """The response class of a typed request, or None (plain JSON)."""
    if type(message) is UntypedMessage:
        return None
    return getattr(type(message), "RESPONSE", None)


def decode_params(message_type: type | None, method: str, params: Any) -> Any:
    """Build the message a handler registered for ``message_type`` receives.

    ``params`` is raw JSON, an already-decoded value (batch entries), or
    MISSING. Raises msgspec.ValidationError when the params do not fit.
    """
    if message_type is None or message_type is UntypedMessage:
        if type(params) is msgspec.Raw:
            return UntypedMessage._from_raw(method, params)
        return UntypedMessage(method, None if params is MISSING else params)
    if type(params) is msgspec.Raw and params != _RAW_NULL:
        # The common case, one call shorter (this runs per incoming message).
        return schema_codec.decode(message_type, params)
    return decode_value(message_type, params)


_RAW_NULL: Final = msgspec.Raw(b"null")


def decode_value(value_type: type, value: Any) -> Any:
    """Decode raw JSON (or convert decoded values) into ``value_type``.

    Goes through the schema codec: one typed msgspec decode, and only if that
    fails the lenient pass (open unions, ``x-deserialize-*`` rules).
    """
    if value is MISSING:
        value = None
    if type(value) is msgspec.Raw:
        if value == _RAW_NULL:
            # Null params of a class whose fields are all optional.
            return schema_codec.convert(value_type, {})
        # A Raw is a buffer already: decoding it directly saves a memoryview.
        return schema_codec.decode(value_type, value)
    if value is None:
        return schema_codec.convert(value_type, {})
    if isinstance(value, value_type):
        return value
    if isinstance(value, msgspec.Struct):
        value = msgspec.to_builtins(value)
    return schema_codec.convert(value_type, value)


def decode_plain(value: Any) -> Any:
    """Raw JSON to plain Python values (dict, list, ...)."""
    if type(value) is msgspec.Raw:
        return _wire.loads(value)
    if value is MISSING:
        return None
    if isinstance(value, msgspec.Struct):
        return msgspec.to_builtins(value)
    return value


def invalid_params_error(exc: Exception, params: Any) -> Error:
    """-32602 with a short reason; the params echoed only while small."""
    data: dict[str, Any] = {"error": str(exc)[:500], "phase": "deserialization"}
    raw = params
    try:
        if type(raw) is msgspec.Raw:
            if len(memoryview(raw)) <= 1024:
                data["json"] = _wire.loads(raw)
            else:
                data["json_size"] = len(memoryview(raw))
        elif raw is not MISSING:
            text = _wire.encode_payload(raw)
            if len(text) <= 1024:
                data["json"] = raw
            else:
                data["json_size"] = len(text)
    except (msgspec.DecodeError, msgspec.EncodeError, RecursionError):
        # Params that are not JSON we can read (invalid UTF-8, 1e400, too
        # deep) are not echoed; re-reading them here used to raise out of the
        # dispatch loop and end the connection.
        pass
    return Error.invalid_params(data)


# --- handler results -----------------------------------------------------------


class NotHandled:
    """Returned by a handler to pass a message on down the chain.

    ``message``, when given, replaces the message for the handlers after this
    one. ``retry=True`` keeps the message for handlers added later with
    ``cx.add_dynamic_handler`` if nothing else claims it.
    """

    __slots__ = ("message", "retry")

    def __init__(self, message: Any = None, *, retry: bool = False) -> None:
        self.message = message
        self.retry = retry

    def __repr__(self) -> str:
        return f"NotHandled(message={self.message!r}, retry={self.retry})"


NOT_HANDLED: Final = NotHandled()
"""Return this from a handler to decline a message."""


# --- dispatches ------------------------------------------------------------------


class RequestDispatch(Generic[T]):
    """An incoming request, for ``on_receive_dispatch`` handlers."""

    __slots__ = ("message", "responder")

    def __init__(self, message: Any, responder: Responder[T]) -> None:
        self.message = message
        self.responder = responder

    def __repr__(self) -> str:
        return f"RequestDispatch({self.message!r}, id={self.responder.id!r})"


class NotificationDispatch:
    """An incoming notification, for ``on_receive_dispatch`` handlers."""

    __slots__ = ("message",)

    def __init__(self, message: Any) -> None:
        self.message = message

    def __repr__(self) -> str:
        return f"NotificationDispatch({self.message!r})"


class ResponseDispatch:
    """A response to one of our requests, for ``on_receive_dispatch`` handlers.

    ``result`` is the peer's result (plain JSON values) or an ``acp.Error``.
    Claiming it makes the handler responsible for ``router``: route it, or
    drop it and the request's awaiter gets a "never received" error. Either
    way, no ``$/cancel_request`` is ever sent for the request from now on.
    """

    __slots__ = ("result", "router")

    def __init__(self, result: Any, router: ResponseRouter) -> None:
        self.result = result
        self.router = router

    @property
    def id(self) -> int:
        return self.router.id

    @property
    def method(self) -> str:
        return self.router.method

    def __repr__(self) -> str:
        return f"ResponseDispatch({self.result!r}, id={self.router.id!r})"


Dispatch = RequestDispatch[Any] | NotificationDispatch | ResponseDispatch


def is_cancel_request_notification(message: object) -> bool:
    """True for a ``$/cancel_request`` notification, plain or in envelopes.

    Accepts an UntypedMessage, a typed message, or a NotificationDispatch. A
    malformed envelope (no string inner method) is not a cancel.
    """
    if isinstance(message, NotificationDispatch):
        message = message.message
    if isinstance(message, RequestDispatch | ResponseDispatch):
        return False
    try:
        method = method_of(message)
    except TypeError:
        return False
    params = wire_params(message)
    while method == SUCCESSOR_METHOD:
        inner = peel_envelope(params)
        if inner is None:
            return False
        method, params = inner
    return method == CANCEL_REQUEST_METHOD


class _EnvelopeParams(msgspec.Struct):
    method: Any = MISSING
    params: msgspec.Raw = MISSING  # type: ignore[assignment]


_envelope_decoder: Final = msgspec.json.Decoder(_EnvelopeParams)


def peel_envelope(params: Any) -> tuple[str, Any] | None:
    """The (method, params) inside one ``_proxy/successor`` envelope.

    None when the envelope has no string "method" (it is then an ordinary
    notification, §4.5). Inner params keep the representation they came in.
    """
    if type(params) is msgspec.Raw:
        try:
            envelope = _envelope_decoder.decode(params)
        except msgspec.DecodeError:
            return None
        if type(envelope.method) is not str:
            return None
        return envelope.method, envelope.params
    if isinstance(params, msgspec.Struct):
        params = msgspec.to_builtins(params)
    if isinstance(params, dict) and type(params.get("method")) is str:
        return params["method"], params.get("params", MISSING)
    return None


def wrap_envelope(method: str, params: Any) -> dict[str, Any]:
    """A ``_proxy/successor`` envelope's params around (method, params)."""
    if params is None:
        return {"method": method}
    return {"method": method, "params": params}
