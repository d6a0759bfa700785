"""The framer finds an oversized line's top-level "id" wherever it is (docs/semantics.md §1.4)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import CoreImpl

BIG = 4096


def _oversized(core, line, cuts=()):
    buffer = core.LineBuffer(max_line=64, head_size=16)
    out, start = [], 0
    for cut in [*sorted(cuts), len(line)]:
        out.extend(buffer.feed(line[start:cut]))
        start = max(start, cut)
    [marker] = out
    assert isinstance(marker, core.OversizedLine)
    return marker.id_text


@pytest.mark.parametrize(
    ("line", "id_text"),
    [
        (b'{"id":7,"params":"' + b"x" * BIG + b'"}\n', b"7"),
        (b'{"params":"' + b"x" * BIG + b'","id":8}\n', b"8"),
        (b'{"a":"' + b"x" * BIG + b'", "id" : "mid" ,"b":"' + b"y" * BIG + b'"}\n', b'"mid"'),
        (b'{"a":[{"id":1},"' + b"x" * BIG + b'"],"id":-3,"b":{"id":4}}\n', b"-3"),
        (b'{"a":"\\"id\\":5,' + b"x" * BIG + b'\\\\","id":6}\n', b"6"),
        (b'{"a":"' + b"x" * BIG + b'","idx":9,"b":1}\n', b""),
        (b'{"a":"' + b"x" * BIG + b'","id":{"n":1}}\n', b""),
        (b'[{"id":1,"a":"' + b"x" * BIG + b'"}]\n', b""),
        (b'"' + b"x" * BIG + b'","id":1}\n', b""),
        (b'{"a":"' + b"x" * BIG + b'"},"id":2}\n', b""),
    ],
    ids=[
        "first",
        "last",
        "middle",
        "nested_ids_ignored",
        "escaped_quotes",
        "other_key",
        "object_value",
        "batch",
        "not_an_object",
        "after_the_object",
    ],
)
def test_the_top_level_id_is_found_at_any_cut(core, line, id_text):
    assert _oversized(core, line) == id_text
    # Cut at every byte around the interesting parts, and everywhere coarsely.
    for cut in [*range(0, 40), *range(len(line) - 40, len(line)), *range(0, len(line), 97)]:
        assert _oversized(core, line, [cut]) == id_text, cut


def test_a_backslash_run_across_pieces_is_counted(core):
    # "...\\\\" then '"': an even run, so the quote closes the string.
    line = b'{"a":"' + b"x" * BIG + b'\\\\\\\\","id":1}\n'
    for cut in range(len(line) - 16, len(line)):
        assert _oversized(core, line, [cut - 2, cut]) == b"1"


def test_an_id_over_the_text_bound_is_not_kept(core):
    line = b'{"a":"' + b"x" * BIG + b'","id":"' + b"i" * 5000 + b'"}\n'
    assert _oversized(core, line, [BIG, BIG + 2000]) == b""


def test_the_id_of_an_unterminated_line_at_eof(core):
    buffer = core.LineBuffer(max_line=64, head_size=16)
    assert buffer.feed(b'{"a":"' + b"x" * BIG + b'","id":12,"b":"') == []
    assert buffer.feed(b"y" * BIG) == []
    rest = buffer.close()
    assert rest.complete is False
    assert rest.id_text == b"12"


def test_the_scanner_is_reset_for_the_next_oversized_line(core):
    buffer = core.LineBuffer(max_line=64, head_size=16)
    first = b'{"id":1,"a":"' + b"x" * BIG + b'"}\n'
    second = b'{"a":"' + b"x" * BIG + b'"}\n'
    out = buffer.feed(first[:100]) + buffer.feed(first[100:] + second[:50])
    out += buffer.feed(second[50:])
    assert [m.id_text for m in out] == [b"1", b""]


# -- both cores agree on random JSON, cut at random places ---------------------

C, PY = CoreImpl("c"), CoreImpl("py")

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.text(alphabet='ab"\\\n{}[],:id ', max_size=8),
    ),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["id", "a", "i"]), inner, max_size=3)
    ),
    max_leaves=12,
)


@pytest.mark.c_extension
@settings(max_examples=300, deadline=None)
@given(
    members=st.lists(
        st.tuples(st.sampled_from(["id", "a", "idd", "i\\"]), json_values), max_size=5
    ),
    cuts=st.lists(st.integers(0, 400), max_size=6),
)
def test_both_cores_find_the_same_id(members, cuts):
    body = ",".join(json.dumps(k) + ":" + json.dumps(v) for k, v in members)
    line = ("{" + body + ',"pad":"' + "p" * 80 + '"}').encode() + b"\n"
    found = _oversized(PY, line, cuts)
    assert _oversized(C, line, cuts) == found
    ids = [v for k, v in members if k == "id"]
    last = ids[-1] if ids else None
    if ids and not isinstance(last, (dict, list)):
        assert json.loads(found) == last
    else:
        assert found == b"" or json.loads(found) in ids
