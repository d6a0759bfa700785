"""The class API's generated method module (codegen/class_api.py)."""

from __future__ import annotations

import inspect

import pytest

import acp_fast as acp
from acp_fast._typed import methods
from acp_fast.schema import v1, v2
from codegen import class_api
from codegen.load import InputError


def test_a_method_without_a_python_name_stops_the_generation() -> None:
    with pytest.raises(InputError, match=r"'vendor/new' has no class-API name"):
        class_api._name("vendor/new")


def test_two_methods_may_not_share_a_python_name(monkeypatch: pytest.MonkeyPatch) -> None:
    names = dict(class_api.NAMES, **{"session/begin": "new_session"})
    monkeypatch.setattr(class_api, "NAMES", names)
    with pytest.raises(InputError, match="share the Python name 'new_session'"):
        class_api.check_names()


@pytest.mark.parametrize(
    ("schema", "table", "base"),
    [
        (v1, methods.V1_AGENT_METHODS, acp.BaseAgent),
        (v1, methods.V1_CLIENT_METHODS, acp.BaseClient),
        (v2, methods.V2_AGENT_METHODS, acp.BaseAgentV2),
        (v2, methods.V2_CLIENT_METHODS, acp.BaseClientV2),
    ],
)
def test_every_method_of_a_side_has_a_typed_method_on_its_base_class(
    schema: object, table: dict[str, str], base: type
) -> None:
    side = "agent" if "Agent" in base.__name__ else "client"
    handled = {m for m, info in schema.METHODS.items() if info.side == side}  # type: ignore[attr-defined]
    assert set(table) == handled
    for wire, name in table.items():
        info = schema.METHODS[wire]  # type: ignore[attr-defined]
        signature = inspect.signature(getattr(base, name))
        (parameter,) = list(signature.parameters.values())[1:]
        assert parameter.annotation.endswith(info.params.__name__), (wire, parameter)
