"""JSON-RPC and ACP errors.

Exception tree::

    Exception
    └── Error                 an error object of the protocol: code, message, data
                              (what a peer answered, what a handler raises to
                              answer, or a local failure such as EOF)

Codes (JSON-RPC 2.0 §5.1, ACP schema ``ErrorCode``)::

    -32700 Parse error              -32603 Internal error
    -32600 Invalid request          -32800 Request cancelled
    -32601 Method not found         -32000 Authentication required
    -32602 Invalid params           -32002 Resource not found
"""

from __future__ import annotations

import re
from enum import IntEnum
from typing import Any

__all__ = ("Error", "ErrorCode", "is_incoming_transport_closed")


class ErrorCode(IntEnum):
    """The error codes ACP gives a meaning to. Any other integer is allowed too."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    REQUEST_CANCELLED = -32800
    AUTH_REQUIRED = -32000
    RESOURCE_NOT_FOUND = -32002


_MESSAGES = {
    ErrorCode.PARSE_ERROR: "Parse error",
    ErrorCode.INVALID_REQUEST: "Invalid request",
    ErrorCode.METHOD_NOT_FOUND: "Method not found",
    ErrorCode.INVALID_PARAMS: "Invalid params",
    ErrorCode.INTERNAL_ERROR: "Internal error",
    ErrorCode.REQUEST_CANCELLED: "Request cancelled",
    ErrorCode.AUTH_REQUIRED: "Authentication required",
    ErrorCode.RESOURCE_NOT_FOUND: "Resource not found",
}

# data.reason of the error every pending request gets when the peer's output
# ends (docs/semantics.md §1.3).
INCOMING_TRANSPORT_CLOSED = "incoming_transport_closed"
# data.reason of a result that does not fit its response type, and where a
# validation message says it failed (msgspec: "... - at `$.field`").
INVALID_RESULT = "invalid_result"
_AT_PATH = re.compile(r"- at `([^`]*)`$")


class Error(Exception):
    """A JSON-RPC error: raised by ``await request`` for an error response,
    and raised (or passed to ``Responder.respond_with_error``) to answer one.

    ``data`` is None when the error object has no ``data`` member.
    """

    code: int
    message: str
    data: Any

    def __init__(self, code: int, message: str | None = None, data: Any = None) -> None:
        if message is None:
            message = _MESSAGES.get(code, "Error")  # type: ignore[call-overload]
        super().__init__(code, message, data)
        self.code = int(code)
        self.message = message
        self.data = data

    def __str__(self) -> str:
        text = f"{self.message} ({self.code})"
        if self.data is not None:
            detail = repr(self.data)
            if len(detail) > 200:
                detail = detail[:200] + "..."
            text += f": {detail}"
        return text

    def __repr__(self) -> str:
        return f"Error(code={self.code}, message={self.message!r}, data={self.data!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Error):
            return NotImplemented
        return (self.code, self.message, self.data) == (other.code, other.message, other.data)

    __hash__ = Exception.__hash__

    def to_dict(self) -> dict[str, Any]:
        """The JSON-RPC error object."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    @classmethod
    def from_dict(cls, error: object) -> Error:
        """Read an error object from the wire, leniently.

        A malformed object still becomes an Error (-32603, naming what was
        wrong) so that a request answered with garbage settles instead of
        hanging.
        """
        if isinstance(error, dict):
            code = error.get("code")
            message = error.get("message")
            if type(code) is int and isinstance(message, str):
                return cls(code, message, error.get("data"))
        return cls(
            ErrorCode.INTERNAL_ERROR,
            "Internal error",
            {"reason": "malformed_error_object", "error": _bounded(error)},
        )

    # -- constructors, one per code ---------------------------------------

    @classmethod
    def parse_error(cls, data: Any = None) -> Error:
        return cls(ErrorCode.PARSE_ERROR, None, data)

    @classmethod
    def invalid_request(cls, data: Any = None) -> Error:
        return cls(ErrorCode.INVALID_REQUEST, None, data)

    @classmethod
    def method_not_found(cls, method: str | None = None) -> Error:
        return cls(ErrorCode.METHOD_NOT_FOUND, None, method)

    @classmethod
    def invalid_params(cls, data: Any = None) -> Error:
        return cls(ErrorCode.INVALID_PARAMS, None, data)

    @classmethod
    def internal_error(cls, data: Any = None) -> Error:
        return cls(ErrorCode.INTERNAL_ERROR, None, data)

    @classmethod
    def request_cancelled(cls, data: Any = None) -> Error:
        return cls(ErrorCode.REQUEST_CANCELLED, None, data)

    @classmethod
    def auth_required(cls, data: Any = None) -> Error:
        return cls(ErrorCode.AUTH_REQUIRED, None, data)

    @classmethod
    def resource_not_found(cls, uri: str | None = None) -> Error:
        return cls(ErrorCode.RESOURCE_NOT_FOUND, None, None if uri is None else {"uri": uri})

    # -- local failures the SDK itself reports ------------------------------

    @classmethod
    def incoming_transport_closed(cls, method: str, details: dict[str, Any] | None = None) -> Error:
        """What a request gets when the peer's output ended before the answer.

        ``details`` says how the peer ended when that is known (a process:
        ``exitStatus``, ``signal``, its last ``stderr`` lines; ``stdout``:
        the last lines it wrote that were not JSON), and is merged into data.
        """
        data: dict[str, Any] = {"reason": INCOMING_TRANSPORT_CLOSED, "method": method}
        if details:
            data.update({k: v for k, v in details.items() if k not in data})
        return cls(ErrorCode.INTERNAL_ERROR, "Incoming transport closed", data)

    @classmethod
    def invalid_result(cls, method: str, error: str) -> Error:
        """What a request gets when its answer is JSON of the wrong shape: a
        result that does not fit the method's response type. Not a parse
        error (the JSON was read); ``data.path`` says where it did not fit."""
        match = _AT_PATH.search(error)
        return cls(
            ErrorCode.INTERNAL_ERROR,
            f"Invalid result of `{method}`",
            {
                "reason": INVALID_RESULT,
                "method": method,
                "error": error[:500],
                "path": match.group(1) if match else "$",
            },
        )

    @classmethod
    def never_received(cls, method: str) -> Error:
        """What a request gets when its answer can no longer be delivered."""
        return cls.internal_error(f"response to `{method}` never received")


def is_incoming_transport_closed(error: BaseException) -> bool:
    """True when ``error`` is the failure of a request whose peer went away."""
    return (
        isinstance(error, Error)
        and isinstance(error.data, dict)
        and error.data.get("reason") == INCOMING_TRANSPORT_CLOSED
    )


def _bounded(value: object, limit: int = 200) -> object:
    text = repr(value)
    return value if len(text) <= limit else text[:limit] + "..."
