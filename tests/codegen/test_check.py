"""Freshness of the committed output and the ``--check`` command."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codegen import __main__ as cli
from codegen import pipeline
from tests.schema.cases import UPSTREAM


def test_committed_modules_are_fresh(built: dict[Path, str]) -> None:
    stale = [
        str(rel)
        for rel, text in built.items()
        if (pipeline.ROOT / rel).read_text(encoding="utf-8") != text
    ]
    assert not stale, "regenerate with `python -m codegen`"


def test_upstream_input_gives_the_same_modules(built: dict[Path, str]) -> None:
    # Upstream files carry prose and no VERSION file; neither may change the output.
    assert pipeline.build(UPSTREAM) == built


@pytest.fixture
def tree(tmp_path: Path, built: dict[Path, str], monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the generated modules; the CLI's build is the session's (no rebuild)."""
    for rel in built:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(pipeline.ROOT / rel, tmp_path / rel)
    monkeypatch.setattr(pipeline, "build", lambda schema_dir=None, progress=None: dict(built))
    return tmp_path


def test_check_passes_on_fresh_tree(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--check", "--root", str(tree)]) == 0
    assert "stale" not in capsys.readouterr().err


def test_check_reports_one_changed_byte(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tree / "acp_fast" / "schema" / "v2.py"
    data = bytearray(path.read_bytes())
    data[-2] = ord("#") if data[-2] != ord("#") else ord(" ")
    path.write_bytes(bytes(data))
    assert cli.main(["--check", "--root", str(tree)]) == 1
    err = capsys.readouterr().err
    assert "acp_fast/schema/v2.py" in err
    assert "v1.py" not in err and "v2_unstable.py" not in err


def test_check_reports_missing_file(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "acp_fast" / "schema" / "v1_unstable.py").unlink()
    assert cli.main(["--check", "--root", str(tree)]) == 1
    assert "v1_unstable.py" in capsys.readouterr().err


def test_regenerate_repairs_the_tree(tree: Path) -> None:
    path = tree / "acp_fast" / "schema" / "v1.py"
    path.write_text("# hand edit\n")
    assert cli.main(["--root", str(tree)]) == 0
    assert cli.main(["--check", "--root", str(tree)]) == 0
