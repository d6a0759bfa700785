"""``schema/`` is exactly what ``strip`` makes of the upstream files."""

from __future__ import annotations

import json
from pathlib import Path

from codegen import __main__ as cli
from codegen import pipeline, strip
from codegen.load import schema_nodes, strip_prose
from tests.schema.cases import UPSTREAM


def committed_releases() -> dict[str, str]:
    return {
        major: (pipeline.SCHEMA_DIR / major / "VERSION").read_text().strip()
        for major in strip.MAJORS
    }


def test_schema_dir_equals_strip_output() -> None:
    files = strip.stripped_files(UPSTREAM, committed_releases())
    for rel, text in files.items():
        assert (pipeline.SCHEMA_DIR / rel).read_text(encoding="utf-8") == text, rel
    listed = {
        p.relative_to(pipeline.SCHEMA_DIR) for p in pipeline.SCHEMA_DIR.rglob("*") if p.is_file()
    }
    assert listed == set(files)


def test_strip_check_command() -> None:
    assert cli.main(["strip", "--from", str(UPSTREAM), "--check"]) == 0


def test_versions() -> None:
    assert committed_releases() == {"v1": "1.21.0", "v2": "2.0.0-alpha.3"}


def test_no_prose_keywords_left() -> None:
    for path in pipeline.SCHEMA_DIR.rglob("schema*.json"):
        schema = json.loads(path.read_text())
        for where, node in schema_nodes(schema):
            assert "description" not in node, f"{path}: {where}"
            assert "examples" not in node, f"{path}: {where}"


def test_structure_is_kept() -> None:
    upstream = json.loads((UPSTREAM / "v2" / "schema.json").read_text())
    ours = json.loads((pipeline.SCHEMA_DIR / "v2" / "schema.json").read_text())
    assert list(ours["$defs"]) == list(upstream["$defs"])
    tool_call = ours["$defs"]["ToolCallUpdate"]
    assert tool_call["required"] == ["toolCallId"]
    assert tool_call["properties"]["content"]["x-deserialize-skip-invalid-items"] is True
    assert ours["$defs"]["UpdateSessionNotification"]["x-method"] == "session/update"


def test_strip_keeps_names_and_data_that_read_like_prose() -> None:
    node = {
        "description": "prose",
        "properties": {"description": {"type": "string", "description": "prose"}},
        "default": {"description": "data, not prose"},
        "x-note": {"description": "annotation data"},
    }
    assert strip_prose(node) == {
        "properties": {"description": {"type": "string"}},
        "default": {"description": "data, not prose"},
        "x-note": {"description": "annotation data"},
    }


def test_strip_writes_only_changes(tmp_path: Path) -> None:
    files = strip.stripped_files(UPSTREAM, committed_releases())
    assert len(strip.write(tmp_path, files)) == len(files)
    assert strip.write(tmp_path, files) == []
    assert (tmp_path / "v1" / "schema.json").read_text().endswith("}\n")
