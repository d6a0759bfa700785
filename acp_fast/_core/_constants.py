"""Values shared by the core modules and the async layer.

Plain Python, never compiled: the compiled and the pure core import the same
objects from here, so a sentinel or a kind code means the same thing whichever
core is running.
"""

from __future__ import annotations

from typing import Final, final

__all__ = (
    "ARMED",
    "DISARMED",
    "ERROR_RESPONSE",
    "INVALID_CALL",
    "INVALID_RESPONSE",
    "MISSING",
    "NOTIFICATION",
    "PARAMS_ABSENT",
    "REQUEST",
    "RESULT_RESPONSE",
    "SETTLED_ERROR",
    "SETTLED_LOST",
    "SETTLED_OK",
    "SHAPE_CALL",
    "SHAPE_RESPONSE",
    "SHAPE_UNKNOWN",
    "UNPUBLISHED",
    "UNSETTLED",
    "Missing",
)


@final
class Missing:
    """The type of MISSING: a key that is absent from a message (not ``null``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "MISSING"


MISSING: Final = Missing()

# What classify() says a decoded JSON value is (docs/semantics.md §1.1, §1.4).
REQUEST: Final = 1  # method + id: dispatch, answer exactly once
NOTIFICATION: Final = 2  # method, no id: dispatch, never answer
RESULT_RESPONSE: Final = 3  # id + result: route to our pending request
ERROR_RESPONSE: Final = 4  # id + error: route to our pending request
INVALID_CALL: Final = 5  # call-shaped but invalid: answer -32600 with id null
INVALID_RESPONSE: Final = 6  # response-shaped but invalid: drop without a reply

# The params "head": the first byte of the params' JSON text, or this when the
# key is absent. Only objects (b"{"), arrays (b"[") and null are allowed.
PARAMS_ABSENT: Final = -1

# What the head of an oversized line reveals (scan_head).
SHAPE_UNKNOWN: Final = 0
SHAPE_CALL: Final = 1
SHAPE_RESPONSE: Final = 2

# The once-only cancellation flag of an outgoing request
# (docs/semantics.md §3.3 C and §3.7: Unpublished -> Armed -> Disarmed).
UNPUBLISHED: Final = 0
ARMED: Final = 1
DISARMED: Final = 2

# The response slot of an outgoing request (§3.3 B): filled exactly once.
UNSETTLED: Final = 0
SETTLED_OK: Final = 1  # the peer's result
SETTLED_ERROR: Final = 2  # the peer's error, or a local failure (EOF, ...)
SETTLED_LOST: Final = 3  # the response can never arrive ("never received")

# The forms of a trace entry's data (an entry is one read, one write, or one
# message given to the trace writer: _events_py, acp_fast/_async/trace.py).
FORM_LINES: Final = 0  # the lines of one read, joined by newlines (none at the end)
FORM_WRITTEN: Final = 1  # whole messages, each with its newline
FORM_ONE: Final = 2  # one message
FORM_OVERSIZED: Final = 3  # the first bytes of an incoming line over the size limit
FORM_READ: Final = 4  # the lines the framer made of one read (bytes or OversizedLine)
