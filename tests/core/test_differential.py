"""Both cores, fed the same random inputs, must give the same results."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import CoreImpl

pytestmark = pytest.mark.c_extension

C, PY = CoreImpl("c"), CoreImpl("py")

line_bytes = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b" "))
streams = st.lists(st.tuples(line_bytes, st.sampled_from([b"\n", b"\r\n"])), max_size=20).map(
    lambda lines: b"".join(body + end for body, end in lines)
)


def _feed(impl, data, cuts, max_line):
    buffer = impl.LineBuffer(max_line=max_line, head_size=4)
    out, start = [], 0
    for cut in sorted(cuts) + [len(data)]:
        out.extend(_plain(x) for x in buffer.feed(data[start:cut]))
        start = max(start, cut)
    rest = buffer.close()
    return out, None if rest is None else _plain(rest)


def _plain(item):
    if isinstance(item, bytes):
        return item
    return ("oversized", item.size, item.head, item.complete)


@settings(max_examples=300, deadline=None)
@given(
    data=streams.flatmap(
        lambda d: st.tuples(st.just(d + b"tail"), st.lists(st.integers(0, len(d) + 4)))
    ),
    max_line=st.integers(1, 50),
)
def test_framers_agree(data, max_line):
    stream, cuts = data
    assert _feed(C, stream, cuts, max_line) == _feed(PY, stream, cuts, max_line)


json_ids = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**64), 2**64),
    st.floats(allow_nan=False),
    st.text(max_size=3),
)
heads = st.sampled_from([-1, 123, 91, 110, 49, 34, 116])


@settings(max_examples=500, deadline=None)
@given(
    jsonrpc=st.sampled_from(["2.0", "1.0", None, 2.0]),
    id=st.one_of(st.just("MISSING"), json_ids),
    method=st.one_of(st.just("MISSING"), st.text(max_size=3), st.integers()),
    params=heads,
    result=st.booleans(),
    error=st.booleans(),
)
def test_classifiers_agree(jsonrpc, id, method, params, result, error):
    from acp_fast._core import MISSING

    id = MISSING if id == "MISSING" else id
    method = MISSING if method == "MISSING" else method
    assert C.classify(jsonrpc, id, method, params, result, error) == PY.classify(
        jsonrpc, id, method, params, result, error
    )
    assert C.is_valid_id(id) == PY.is_valid_id(id)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=60) | st.text(max_size=60).map(str.encode))
def test_head_scanners_agree(head):
    assert C.scan_head(head) == PY.scan_head(head)


operations = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "new",
                "register",
                "arm",
                "take",
                "disarm",
                "settle",
                "respond",
                "fail_all",
                "incoming",
                "cancel_in",
                "remove_in",
            ]
        ),
        st.integers(0, 5),
    ),
    max_size=60,
)


def _run_table(impl, ops):
    table = impl.RequestTable(first_id=1)
    requests, incoming, trace = [], [], []
    for op, n in ops:
        if op == "new":
            requests.append(table.new_request(f"m{n}"))
            trace.append(requests[-1].id)
        elif requests and op in ("register", "arm", "take", "disarm", "settle"):
            request = requests[n % len(requests)]
            if op == "register":
                table.register(request)
            elif op == "arm":
                trace.append(request.arm())
            elif op == "take":
                trace.append(request.take_armed())
            elif op == "disarm":
                request.disarm()
            else:
                trace.append(request.settle(1 + n % 3, n))
        elif op == "respond":
            found = table.take_response(n)
            trace.append(None if found is None else found.id)
        elif op == "fail_all":
            trace.append([r.id for r in table.fail_all()])
        elif op == "incoming":
            incoming.append(table.register_incoming(n))
        elif op == "cancel_in":
            found = table.cancel_incoming(n)
            trace.append(None if found is None else (found.id, found.cancelled))
        elif op == "remove_in" and incoming:
            table.remove_incoming(incoming[n % len(incoming)])
        trace.append((table.outgoing_count, table.incoming_count))
    trace.append([(r.flag, r.settlement, r.value) for r in requests])
    trace.append([table.is_current(i) for i in incoming])
    return trace


@settings(max_examples=300, deadline=None)
@given(operations)
def test_request_tables_agree(ops):
    assert _run_table(C, ops) == _run_table(PY, ops)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=60) | st.text(max_size=60).map(str.encode))
def test_tail_scanners_agree(tail):
    assert C.scan_tail(tail) == PY.scan_tail(tail)
