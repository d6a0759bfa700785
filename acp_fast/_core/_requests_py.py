# Request bookkeeping of one connection: the requests we sent, waiting for a
# response, and the requests the peer sent us, which its $/cancel_request
# notifications may target.
#
# Outgoing requests (docs/semantics.md §3.3, §3.4, §3.7)
# -------------------------------------------------------
# Each OutgoingRequest holds two independent pieces of state:
#
# * the once-only cancellation flag, UNPUBLISHED -> ARMED -> DISARMED.
#   - publication moves UNPUBLISHED to ARMED, and only from UNPUBLISHED;
#   - take_armed() is the single transition that may send a $/cancel_request:
#     it moves ARMED to DISARMED and reports whether it did. Every cancel path
#     (cancel(), a cancellation handle, a forwarded marker, an abandoned
#     awaiter, garbage collection) goes through it, so at most one cancel is
#     ever sent per request. The flag is taken *before* the send is attempted,
#     so a failed send still spends the token (§7);
#   - disarm() moves any state to DISARMED without sending: detach, a routed
#     response, a local failure.
# * the response slot, UNSETTLED until settle() fills it exactly once with the
#   peer's result, the peer's (or a local) error, or "lost". Settling disarms:
#   once a response is routed, no cancel is ever sent for that request.
#
# The table holds a request from publication (register) until its response
# is routed (take_response) or the connection fails every pending request at
# EOF (fail_all). A request that was dropped or detached stays in the table, so
# its late response is routed and discarded rather than reported as unknown.
#
# Incoming requests (§4.4)
# ------------------------
# The registry maps the peer's request ids to the newest IncomingRequest with
# that id. Object identity plays the role of the reference's generation
# counter: a peer that reuses an id (a protocol violation) gets a new object,
# the old one stops being "current", and a stale Responder can neither see the
# newer request's cancellation nor remove its slot. (The dispatch loop asks
# in_flight first and refuses such a request, so this is a second line.)
#
# The core never creates futures, events or tasks. ``consumer``, ``route`` and
# ``data`` on OutgoingRequest and ``marker`` on IncomingRequest are opaque
# slots for the async layer.
#
# This file is compiled by Cython (with _requests_c.pxd) and is also the
# pure-Python fallback; it must never import cython.

from __future__ import annotations

from ._constants import ARMED, DISARMED, UNPUBLISHED, UNSETTLED


class OutgoingRequest:
    """One request we send: id, method, cancellation flag and response slot."""

    __slots__ = (
        "consumer",
        "data",
        "flag",
        "id",
        "method",
        "ordered",
        "route",
        "settlement",
        "value",
    )

    def __init__(self, id: int, method: str) -> None:
        self.id = id
        self.method = method
        self.flag = UNPUBLISHED
        self.settlement = UNSETTLED
        self.value: object = None
        # Set when an ordered consumer (a result callback) was attached before
        # the response was routed: dispatch then waits for it (§2.4, §3.5).
        self.ordered = False
        self.consumer: object = None
        self.route: object = None
        self.data: object = None

    def arm(self) -> bool:
        """Publication: UNPUBLISHED -> ARMED. False if already disarmed."""
        if self.flag == UNPUBLISHED:
            self.flag = ARMED
            return True
        return False

    def take_armed(self) -> bool:
        """ARMED -> DISARMED; True means the caller must send the one cancel."""
        if self.flag == ARMED:
            self.flag = DISARMED
            return True
        return False

    def disarm(self) -> None:
        """Never send a cancel for this request from now on."""
        self.flag = DISARMED

    @property
    def armed(self) -> bool:
        return self.flag == ARMED

    @property
    def settled(self) -> bool:
        return self.settlement != UNSETTLED

    def settle(self, settlement: int, value: object) -> bool:
        """Fill the response slot once; later calls change nothing."""
        if self.settlement != UNSETTLED:
            return False
        self.flag = DISARMED
        self.settlement = settlement
        self.value = value
        return True

    def __repr__(self) -> str:
        return (
            f"<OutgoingRequest id={self.id!r} method={self.method!r} "
            f"flag={self.flag} settlement={self.settlement}>"
        )


class IncomingRequest:
    """A request the peer sent us, as the cancellation registry knows it."""

    __slots__ = ("cancelled", "id", "marker")

    def __init__(self, id: object) -> None:
        self.id = id
        # Recorded by a $/cancel_request that arrived before anyone asked for
        # a marker; the marker made later is then born cancelled (§4.4).
        self.cancelled = False
        self.marker: object = None

    def __repr__(self) -> str:
        return f"<IncomingRequest id={self.id!r} cancelled={self.cancelled}>"


class RequestTable:
    """Outgoing requests by our ids; incoming requests by the peer's ids."""

    __slots__ = ("_incoming", "_next_id", "_outgoing", "closing")

    def __init__(self, first_id: int = 1) -> None:
        self._outgoing: dict[int, OutgoingRequest] = {}
        self._incoming: dict[object, IncomingRequest] = {}
        self._next_id = first_id
        # Set when incoming EOF processing begins: from then on requests fail
        # at creation with the EOF error (§2.6 step 1).
        self.closing = False

    # -- outgoing ---------------------------------------------------------

    def new_request(self, method: str) -> OutgoingRequest:
        """Reserve an id for a request; nothing is registered yet."""
        request_id = self._next_id
        self._next_id = request_id + 1
        # __new__ and the slots set here, not OutgoingRequest(...): compiled,
        # that skips the argument parsing of __init__ (a third of the cost).
        request = OutgoingRequest.__new__(OutgoingRequest)
        request.id = request_id
        request.method = method
        request.flag = UNPUBLISHED
        request.settlement = UNSETTLED
        request.value = None
        request.ordered = False
        request.consumer = None
        request.route = None
        request.data = None
        return request

    def register(self, request: OutgoingRequest) -> None:
        """Make ``request`` pending, so that its response can be routed."""
        self._outgoing[request.id] = request

    def take_response(self, request_id: object) -> OutgoingRequest | None:
        """Remove and return the pending request a response with this id answers.

        Ids are compared by type as well as value (a response id that is the
        string "5" does not answer our request 5); the classifier has already
        rejected floats and bools.
        """
        if type(request_id) is not int:
            return None
        return self._outgoing.pop(request_id, None)

    def pending(self, request_id: int) -> OutgoingRequest | None:
        return self._outgoing.get(request_id)

    def fail_all(self) -> list[OutgoingRequest]:
        """Remove every pending request and return them, oldest first."""
        requests = list(self._outgoing.values())
        self._outgoing.clear()
        return requests

    @property
    def outgoing_count(self) -> int:
        return len(self._outgoing)

    # -- incoming ---------------------------------------------------------

    def register_incoming(self, request_id: object) -> IncomingRequest:
        """Track a request from the peer; a reused id replaces the older one."""
        incoming = IncomingRequest.__new__(IncomingRequest)  # as in new_request
        incoming.id = request_id
        incoming.cancelled = False
        incoming.marker = None
        self._incoming[request_id] = incoming
        return incoming

    def in_flight(self, request_id: object) -> bool:
        """True while a request from the peer with this id is unanswered."""
        return request_id in self._incoming

    def cancel_incoming(self, request_id: object) -> IncomingRequest | None:
        """Record the peer's $/cancel_request for ``request_id``.

        Returns the current request with that id (its marker, if one was handed
        out, must now be fired by the caller), or None for an unknown id.
        """
        incoming = self._incoming.get(request_id)
        if incoming is None:
            return None
        incoming.cancelled = True
        return incoming

    def is_current(self, incoming: IncomingRequest) -> bool:
        """False once answered, abandoned, or replaced by a reused id."""
        return self._incoming.get(incoming.id) is incoming

    def remove_incoming(self, incoming: IncomingRequest) -> None:
        """Forget ``incoming``; a newer request with the same id is kept."""
        if self._incoming.get(incoming.id) is incoming:
            del self._incoming[incoming.id]

    @property
    def incoming_count(self) -> int:
        return len(self._incoming)
