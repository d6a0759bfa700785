"""Every method's sample payloads: valid upstream, decoded, re-encoded unchanged."""

from __future__ import annotations

import json

import pytest

from acp_fast.schema import decode, encode
from tests.schema.cases import (
    ALL_CASES,
    MODULES,
    Case,
    cases_for,
    payload_definitions,
    validate_upstream,
)


def roundtrip(tp: object, payload: object) -> object:
    decoded = decode(tp, json.dumps(payload).encode())
    return json.loads(encode(decoded))


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.id)
def test_params_roundtrip(case: Case) -> None:
    info = MODULES[case.module].METHODS[case.method]
    definition = payload_definitions(case.module)[case.method, case.kind]
    validate_upstream(case.module, definition, case.params)
    tp = info.request if case.kind == "request" else info.notification
    assert roundtrip(tp, case.params) == case.params


@pytest.mark.parametrize("case", [c for c in ALL_CASES if c.has_result], ids=lambda c: c.id)
def test_result_roundtrip(case: Case) -> None:
    assert case.kind == "request", "only requests have results"
    info = MODULES[case.module].METHODS[case.method]
    definition = payload_definitions(case.module)[case.method, "response"]
    validate_upstream(case.module, definition, case.result)
    assert roundtrip(info.response, case.result) == case.result


@pytest.mark.parametrize("module", list(MODULES))
def test_every_method_has_samples(module: str) -> None:
    """Params of every request and notification, and every result, are covered."""
    cases = cases_for(module)
    missing = []
    for method, info in MODULES[module].METHODS.items():
        mine = [c for c in cases if c.method == method]
        if info.request is not None:
            if not any(c.kind == "request" for c in mine):
                missing.append(f"{method} request params")
            if not any(c.kind == "request" and c.has_result for c in mine):
                missing.append(f"{method} result")
        if info.notification is not None and not any(c.kind == "notification" for c in mine):
            missing.append(f"{method} notification params")
    assert not missing
