"""RequestTable: the outgoing state machine (§3.4, §3.7) and the registry (§4.4)."""

from __future__ import annotations

from acp_fast._core import (
    ARMED,
    DISARMED,
    SETTLED_ERROR,
    SETTLED_LOST,
    SETTLED_OK,
    UNPUBLISHED,
    UNSETTLED,
)


def test_ids_are_fresh_integers_from_the_first_id(core):
    table = core.RequestTable(first_id=40)
    first, second = table.new_request("a"), table.new_request("b")
    assert (first.id, second.id) == (40, 41)
    assert (first.method, second.method) == ("a", "b")


def test_new_request_is_unpublished_and_unregistered(core):
    table = core.RequestTable()
    request = table.new_request("m")
    assert request.flag == UNPUBLISHED and not request.armed
    assert request.settlement == UNSETTLED and not request.settled
    assert table.outgoing_count == 0
    assert not request.take_armed()  # cancelling before publication is a no-op
    assert request.flag == UNPUBLISHED  # ... and is not remembered


def test_cancel_is_once_only(core):
    request = core.RequestTable().new_request("m")
    assert request.arm()
    assert request.armed
    assert request.take_armed()
    assert request.flag == DISARMED
    assert not request.take_armed()
    assert not request.arm()  # never re-armed


def test_disarm_prevents_publication_and_cancel(core):
    request = core.RequestTable().new_request("m")
    request.disarm()
    assert not request.arm()
    assert not request.take_armed()


def test_settle_fills_once_and_disarms(core):
    request = core.RequestTable().new_request("m")
    request.arm()
    assert request.settle(SETTLED_OK, "value")
    assert request.flag == DISARMED
    assert not request.settle(SETTLED_ERROR, "other")
    assert (request.settlement, request.value) == (SETTLED_OK, "value")
    assert not request.take_armed()


def test_response_routing_by_id_and_type(core):
    table = core.RequestTable(first_id=5)
    request = table.new_request("m")
    table.register(request)
    assert table.outgoing_count == 1
    assert table.take_response("5") is None  # a string never answers an int id
    assert table.take_response(6) is None
    assert table.take_response(5) is request
    assert table.take_response(5) is None
    assert table.outgoing_count == 0


def test_fail_all_empties_the_table_in_order(core):
    table = core.RequestTable()
    requests = [table.new_request(str(i)) for i in range(3)]
    for request in requests:
        table.register(request)
    assert table.fail_all() == requests
    assert table.outgoing_count == 0
    assert table.fail_all() == []


def test_opaque_slots_belong_to_the_caller(core):
    request = core.RequestTable().new_request("m")
    sentinel = object()
    request.consumer = request.route = request.data = sentinel
    request.ordered = True
    assert request.consumer is request.route is request.data is sentinel
    assert request.ordered


def test_registry_marks_and_removes_requests(core):
    # docs/semantics.md §6.J #113
    table = core.RequestTable()
    incoming = table.register_incoming("req-1")
    assert table.is_current(incoming) and not incoming.cancelled
    assert table.cancel_incoming("req-1") is incoming
    assert incoming.cancelled
    table.remove_incoming(incoming)
    assert not table.is_current(incoming)
    assert table.cancel_incoming("req-1") is None
    assert table.incoming_count == 0


def test_unknown_ids_are_ignored(core):
    table = core.RequestTable()
    table.register_incoming(1)
    assert table.cancel_incoming("1") is None  # the string is another id
    assert table.cancel_incoming(2) is None


def test_reused_request_id_does_not_cross_wire_cancellation_state(core):
    # docs/semantics.md §6.J #114
    table = core.RequestTable()
    older = table.register_incoming(7)
    newer = table.register_incoming(7)
    assert table.cancel_incoming(7) is newer
    assert newer.cancelled and not older.cancelled
    assert not table.is_current(older)
    table.remove_incoming(older)  # a stale responder keeps the newer slot
    assert table.is_current(newer)
    table.remove_incoming(newer)
    assert table.incoming_count == 0


def test_null_and_int_and_string_ids_are_distinct_keys(core):
    table = core.RequestTable()
    none_request = table.register_incoming(None)
    int_request = table.register_incoming(1)
    str_request = table.register_incoming("1")
    assert table.cancel_incoming(None) is none_request
    assert table.cancel_incoming(1) is int_request
    assert table.cancel_incoming("1") is str_request
    assert table.incoming_count == 3


def test_closing_flag(core):
    table = core.RequestTable()
    assert not table.closing
    table.closing = True
    assert table.closing


def test_state_constants_are_distinct():
    assert len({UNPUBLISHED, ARMED, DISARMED}) == 3
    assert len({UNSETTLED, SETTLED_OK, SETTLED_ERROR, SETTLED_LOST}) == 4
