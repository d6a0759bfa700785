"""Bad input stops the generator with a message naming the file and the place."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from codegen import load
from tests.codegen.support import FIXTURE_DIR


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE_DIR, tmp_path, dirs_exist_ok=True)
    return tmp_path


def edit(path: Path, change) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_fixture_loads(copy: Path) -> None:
    inp = load.load(copy, "v1", unstable=False)
    assert inp.release == "0.1.0"
    assert "description" not in inp.schema["$defs"]["AddNoteRequest"]


def test_invalid_json_schema(copy: Path) -> None:
    edit(copy / "v1" / "schema.json", lambda s: s["$defs"]["Edit"].update(type=5))
    with pytest.raises(
        load.InputError, match=r"schema\.json: not a valid JSON Schema.*\$defs/Edit/type"
    ):
        load.load(copy, "v1", unstable=False)


def test_unresolvable_ref(copy: Path) -> None:
    edit(
        copy / "v1" / "schema.json",
        lambda s: s["$defs"]["Edit"]["properties"].update(x={"$ref": "#/$defs/Nope"}),
    )
    with pytest.raises(
        load.InputError, match=r"unresolvable \$ref '#/\$defs/Nope' at #/\$defs/Edit/properties/x"
    ):
        load.load(copy, "v1", unstable=False)


def test_invalid_json(copy: Path) -> None:
    (copy / "v1" / "meta.json").write_text("{")
    with pytest.raises(load.InputError, match=r"meta\.json: invalid JSON"):
        load.load(copy, "v1", unstable=False)


def test_method_missing_from_meta(copy: Path) -> None:
    edit(copy / "v1" / "meta.json", lambda m: m["clientMethods"].clear())
    with pytest.raises(
        load.InputError, match=r"x-method not listed in the meta table: \['note/changed'\]"
    ):
        load.load(copy, "v1", unstable=False)


def test_meta_method_without_payload(copy: Path) -> None:
    edit(copy / "v1" / "meta.json", lambda m: m["agentMethods"].update(extra="x/extra"))
    with pytest.raises(load.InputError, match=r"without a payload: \['x/extra'\]"):
        load.load(copy, "v1", unstable=False)


def test_missing_version(copy: Path) -> None:
    (copy / "v1" / "VERSION").unlink()
    with pytest.raises(load.InputError, match="VERSION: missing"):
        load.load(copy, "v1", unstable=False)
