"""acp_fast.helpers builds every content block and every session update of v1."""

from __future__ import annotations

import typing

from acp_fast import helpers as h
from acp_fast.schema import decode, encode, v1

EXAMPLES = [
    h.text("hi"),
    h.image("aGk=", "image/png", uri="file:///a.png"),
    h.audio("aGk=", "audio/wav"),
    h.resource_link("file:///a.py", "a.py", mime_type="text/x-python"),
    h.embedded_text("file:///a.py", "print()", mime_type="text/x-python"),
    h.embedded_blob("file:///a.bin", "AA=="),
    h.user_text("hi"),
    h.user_message(h.image("aGk=", "image/png")),
    h.agent_text("hi"),
    h.agent_message(h.resource_link("file:///a", "a")),
    h.agent_thought("hm"),
    h.agent_thought_block(h.text("hm")),
    h.tool_call("c1", "Edit", kind="edit", content=[h.diff("a.py", "new", "old")]),
    h.tool_call_update("c1", status="completed", content=[h.terminal_content("t1")]),
    h.plan(["one", h.plan_entry("two", priority="high")]),
    h.available_commands([h.command("test", "Run the tests", hint="which tests")]),
    h.current_mode("code"),
    h.config_options_update([]),
    h.session_info(title="Fix the bug", updated_at="2025-01-01T00:00:00Z"),
    h.usage(1200, 200000, cost=0.25),
]


def variants(union: object) -> set[type]:
    return {
        arg
        for arg in typing.get_args(union)
        if isinstance(arg, type) and arg.__name__ != "UnknownVariant"
    }


def test_every_content_block_and_update_kind_has_a_helper():
    built = {type(example) for example in EXAMPLES}
    assert variants(v1.ContentBlock) <= built
    assert variants(v1.SessionUpdate) <= built


def test_what_they_build_round_trips():
    for example in EXAMPLES:
        union = v1.ContentBlock if type(example) in variants(v1.ContentBlock) else v1.SessionUpdate
        assert decode(union, encode(example)) == example
    assert encode(h.usage(1, 2, cost=0.5)) == (
        b'{"sessionUpdate":"usage_update","used":1,"size":2,"cost":{"amount":0.5,"currency":"USD"}}'
    )
