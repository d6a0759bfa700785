"""``RequestError``: the official SDK's JSON-RPC error, as an ``acp_fast.Error``."""

from __future__ import annotations

from typing import Any

from .._errors import Error

__all__ = ("RequestError",)


class RequestError(Error):
    """A JSON-RPC error with the official SDK's constructors and ``str()``.

    It *is* an ``acp_fast.Error``: raised from a handler it answers the
    request with its code, message and data; errors from the peer are raised
    as ``RequestError`` by the compatibility connections.
    """

    def __init__(self, code: int, message: str | None = None, data: Any | None = None) -> None:
        super().__init__(code, message, data)

    def __str__(self) -> str:
        return self.message

    @classmethod
    def from_error(cls, error: Error) -> RequestError:
        if isinstance(error, RequestError):
            return error
        return cls(error.code, error.message, error.data)

    @classmethod
    def parse_error(cls, data: dict[str, Any] | None = None) -> RequestError:
        return cls(-32700, "Parse error", data)

    @classmethod
    def invalid_request(cls, data: dict[str, Any] | None = None) -> RequestError:
        return cls(-32600, "Invalid request", data)

    @classmethod
    def method_not_found(cls, method: str | None = None) -> RequestError:
        return cls(-32601, "Method not found", {"method": method})

    @classmethod
    def invalid_params(cls, data: dict[str, Any] | None = None) -> RequestError:
        return cls(-32602, "Invalid params", data)

    @classmethod
    def internal_error(cls, data: dict[str, Any] | None = None) -> RequestError:
        return cls(-32603, "Internal error", data)

    @classmethod
    def auth_required(cls, data: dict[str, Any] | None = None) -> RequestError:
        return cls(-32000, "Authentication required", data)

    @classmethod
    def resource_not_found(cls, uri: str | None = None) -> RequestError:
        return cls(-32002, "Resource not found", {"uri": uri} if uri is not None else None)

    def to_error_obj(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "data": self.data}
