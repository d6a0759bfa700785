"""Sample payloads and the upstream schema, for the tests of ``acp_fast.schema``.

Samples live in ``samples/<major>/<method>.json``::

    {"method": "session/prompt",
     "cases": [{"name": "...", "params": {...}, "result": {...},
                "unstable": true,            # only in the *_unstable module
                "kind": "request"}]}         # only for methods that are both

The upstream schemas (a ``shared/acp-schema`` folder beside the repository, or
``$ACP_UPSTREAM_SCHEMA``) are the reference every sample is validated against.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest

from acp_fast.schema import v1, v1_unstable, v2, v2_unstable

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = Path(__file__).resolve().parent / "samples"
UPSTREAM = Path(os.environ.get("ACP_UPSTREAM_SCHEMA", ROOT.parent / "shared" / "acp-schema"))

MODULES: dict[str, ModuleType] = {
    "v1": v1,
    "v1_unstable": v1_unstable,
    "v2": v2,
    "v2_unstable": v2_unstable,
}


@dataclass(frozen=True)
class Case:
    """One sample payload of one method."""

    module: str
    method: str
    name: str
    kind: str  # "request" or "notification"
    params: Any
    result: Any
    has_result: bool

    @property
    def id(self) -> str:
        return f"{self.module}:{self.method}:{self.name}"


def module_major(module: str) -> str:
    return module.split("_")[0]


def cases_for(module: str) -> list[Case]:
    """Every sample that applies to ``module`` (stable samples apply to both files)."""
    unstable = module.endswith("_unstable")
    out = []
    for path in sorted((SAMPLES / module_major(module)).glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        info = MODULES[module].METHODS.get(data["method"])
        for case in data["cases"]:
            if case.get("unstable") and not unstable:
                continue
            assert info is not None, f"{path.name}: {data['method']} not in {module}"
            kind = case.get("kind") or ("request" if info.request is not None else "notification")
            out.append(
                Case(
                    module=module,
                    method=data["method"],
                    name=case["name"],
                    kind=kind,
                    params=case["params"],
                    result=case.get("result"),
                    has_result="result" in case,
                )
            )
    return out


ALL_CASES = [case for module in MODULES for case in cases_for(module)]


@cache
def upstream_schema(module: str) -> dict[str, Any]:
    name = "schema.unstable.json" if module.endswith("_unstable") else "schema.json"
    path = UPSTREAM / module_major(module) / name
    if not path.is_file():
        pytest.fail(f"upstream schema not found at {path}; set ACP_UPSTREAM_SCHEMA")
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@cache
def payload_definitions(module: str) -> dict[tuple[str, str], str]:
    """``(method, role)`` → definition name, read from the upstream schema itself."""
    out = {}
    for name, schema in upstream_schema(module)["$defs"].items():
        method = schema.get("x-method")
        if method is None:
            continue
        for suffix, role in (
            ("Request", "request"),
            ("Response", "response"),
            ("Notification", "notification"),
        ):
            if name.endswith(suffix):
                out[method, role] = name
    return out


def validate_upstream(module: str, definition: str, instance: Any) -> None:
    """Validate ``instance`` against one ``$defs`` entry of the upstream schema."""
    schema = upstream_schema(module)
    root = {"$schema": schema["$schema"], "$ref": f"#/$defs/{definition}", "$defs": schema["$defs"]}
    jsonschema.Draft202012Validator(root).validate(instance)
