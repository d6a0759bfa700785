"""The sans-IO core of acp_fast: bytes and values in, lines and decisions out.

Nothing here performs I/O, awaits, or imports anything outside the standard
library (not anyio, not the schema): the async layer owns every future, event
and task, and hands the core opaque slots to carry them.

Each hot module is written once as typed Python (``_framing_py``,
``_messages_py``, ``_requests_py``, ``_events_py``) and compiled by Cython
from that same source as ``_framing_c`` and friends. This module picks one
implementation for the whole process:

* ``ACP_FAST_NO_EXTENSIONS`` set to anything but "" or "0" selects the pure
  Python modules (the only place that variable is read);
* otherwise the compiled modules, falling back to pure Python (all of it)
  when any of them was not built (a pure install, another Python
  implementation, or a build older than one of the modules).

``IMPLEMENTATION`` says which one is running: ``"c"`` or ``"py"``.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from ._constants import (
    ARMED,
    DISARMED,
    ERROR_RESPONSE,
    FORM_LINES,
    FORM_ONE,
    FORM_OVERSIZED,
    FORM_READ,
    FORM_WRITTEN,
    INVALID_CALL,
    INVALID_RESPONSE,
    MISSING,
    NOTIFICATION,
    PARAMS_ABSENT,
    REQUEST,
    RESULT_RESPONSE,
    SETTLED_ERROR,
    SETTLED_LOST,
    SETTLED_OK,
    SHAPE_CALL,
    SHAPE_RESPONSE,
    SHAPE_UNKNOWN,
    UNPUBLISHED,
    UNSETTLED,
    Missing,
)

__all__ = (
    "ARMED",
    "DISARMED",
    "ERROR_RESPONSE",
    "FORM_LINES",
    "FORM_ONE",
    "FORM_OVERSIZED",
    "FORM_READ",
    "FORM_WRITTEN",
    "IMPLEMENTATION",
    "INVALID_CALL",
    "INVALID_RESPONSE",
    "MISSING",
    "NOTIFICATION",
    "NO_EXTENSIONS",
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
    "EntryQueue",
    "HopEntries",
    "IncomingRequest",
    "LineBuffer",
    "Missing",
    "OutgoingRequest",
    "OversizedLine",
    "RequestTable",
    "classify",
    "classify_envelope",
    "entry_lines",
    "is_valid_id",
    "join_events",
    "params_head_of",
    "scan_head",
    "scan_tail",
)

NO_EXTENSIONS: bool = (
    os.environ.get("ACP_FAST_NO_EXTENSIONS", "") not in ("", "0")
    or sys.implementation.name != "cpython"
)

if TYPE_CHECKING or NO_EXTENSIONS:
    from ._events_py import EntryQueue, HopEntries, entry_lines, join_events
    from ._framing_py import LineBuffer, OversizedLine
    from ._messages_py import (
        classify,
        classify_envelope,
        is_valid_id,
        params_head_of,
        scan_head,
        scan_tail,
    )
    from ._requests_py import IncomingRequest, OutgoingRequest, RequestTable

    IMPLEMENTATION = "py"
else:
    try:
        from ._events_c import EntryQueue, HopEntries, entry_lines, join_events
        from ._framing_c import LineBuffer, OversizedLine
        from ._messages_c import (
            classify,
            classify_envelope,
            is_valid_id,
            params_head_of,
            scan_head,
            scan_tail,
        )
        from ._requests_c import IncomingRequest, OutgoingRequest, RequestTable

        IMPLEMENTATION = "c"
    except ImportError:  # a pure install (or a build older than a module)
        from ._events_py import EntryQueue, HopEntries, entry_lines, join_events
        from ._framing_py import LineBuffer, OversizedLine
        from ._messages_py import (
            classify,
            classify_envelope,
            is_valid_id,
            params_head_of,
            scan_head,
            scan_tail,
        )
        from ._requests_py import IncomingRequest, OutgoingRequest, RequestTable

        IMPLEMENTATION = "py"
