"""The compiled core is what runs, unless the pure core was asked for."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import acp_fast._core as core
from tests.helpers import NO_EXTENSIONS


@pytest.mark.c_extension
def test_compiled_core_is_loaded():
    # Fails (never skips) when the extension modules were not built.
    assert not NO_EXTENSIONS
    assert core.IMPLEMENTATION == "c"
    assert type(core.LineBuffer).__name__ != "type" or core.LineBuffer.__module__.endswith("_c")
    # Every compiled module, not only the first one imported.
    for name in ("LineBuffer", "classify", "RequestTable", "join_events"):
        assert getattr(core, name).__module__.endswith("_c"), name


def test_pure_core_is_selected_by_the_environment():
    code = "import acp_fast._core as c; print(c.IMPLEMENTATION, c.LineBuffer.__module__)"
    env = {"ACP_FAST_NO_EXTENSIONS": "1", "PATH": ""}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["py", "acp_fast._core._framing_py"]


def test_a_missing_compiled_module_falls_back_to_the_pure_core_whole():
    # A build older than one of the modules (or one that compiled only some)
    # must still import: the whole core is then the pure one.
    code = (
        "import sys; sys.modules['acp_fast._core._events_c'] = None;"
        "import acp_fast, acp_fast._core as c;"
        "print(c.IMPLEMENTATION, c.join_events.__module__, c.LineBuffer.__module__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env={"PATH": ""}, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["py", "acp_fast._core._events_py", "acp_fast._core._framing_py"]


def test_zero_means_no(monkeypatch):
    code = "import acp_fast._core as c; print(c.NO_EXTENSIONS)"
    env = {"ACP_FAST_NO_EXTENSIONS": "0", "PATH": ""}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


def test_core_imports_nothing_but_the_standard_library():
    # The sans-IO core must never pull in anyio, the schema, or the async layer.
    # Importing acp_fast._core normally runs acp_fast/__init__.py first (which
    # loads everything), so the core is imported under a bare parent package.
    package_dir = os.path.dirname(core.__path__[0])
    code = (
        "import sys, types;"
        "package = types.ModuleType('acp_fast');"
        f"package.__path__ = [{package_dir!r}];"
        "sys.modules['acp_fast'] = package;"
        "import acp_fast._core;"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('anyio', 'trio', 'msgspec', 'orjson', 'sniffio')"
        " or (m.startswith('acp_fast.') and not m.startswith('acp_fast._core'))];"
        "print(bad, acp_fast._core.IMPLEMENTATION)"
    )
    for env in ({"PATH": ""}, {"ACP_FAST_NO_EXTENSIONS": "1", "PATH": ""}):
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.split()[0] == "[]"
