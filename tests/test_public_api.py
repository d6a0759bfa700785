"""The public surface: ``acp_fast.__all__`` is exact, and every name resolves."""

from __future__ import annotations

import importlib
import subprocess
import sys
import types

import acp_fast


def test_all_is_unique_and_resolvable():
    names = list(acp_fast.__all__)
    assert len(names) == len(set(names))
    for name in names:
        assert getattr(acp_fast, name) is not None, name


def public_attributes() -> set[str]:
    public = {
        name
        for name, value in vars(acp_fast).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    return public - {"TYPE_CHECKING", "annotations"}


def test_every_public_attribute_is_in_all():
    public = public_attributes()
    assert public <= set(acp_fast.__all__), public - set(acp_fast.__all__)


def test_all_is_exactly_what_is_exported():
    exported = public_attributes() | set(acp_fast._LAZY) | {"__version__"}
    assert set(acp_fast.__all__) == exported


def test_exported_classes_and_functions_belong_to_acp_fast():
    for name in acp_fast.__all__:
        value = getattr(acp_fast, name)
        if isinstance(value, type | types.FunctionType):
            assert value.__module__ == "acp_fast", name
            assert value.__name__ == name, name
    assert repr(acp_fast.SentRequest) == "<class 'acp_fast.SentRequest'>"


def test_lazy_names_are_all_exported_and_typed_api_loads_on_demand():
    assert set(acp_fast._LAZY) <= set(acp_fast.__all__)
    code = "import sys, acp_fast; print('acp_fast.schema.v1' in sys.modules); acp_fast.BaseAgent; print('acp_fast.schema.v1' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_public_modules_import():
    for module in (
        "acp_fast.testing",
        "acp_fast.helpers",
        "acp_fast.schema",
        "acp_fast.schema.v1",
        "acp_fast.schema.v2",
    ):
        importlib.import_module(module)


def test_unknown_attribute_raises_attribute_error():
    try:
        acp_fast.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")
