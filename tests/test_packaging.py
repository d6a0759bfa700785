"""Packaging facts that a source checkout can check without building.

Building and installing the distributions is tools/check_dist.py's job (CI
runs it); these tests keep its inputs honest.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

import acp_fast
from acp_fast._version import __version__

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parent.parent


def test_the_version_is_written_once() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert acp_fast.__version__ == __version__
    assert importlib.metadata.version("acp-fast") == __version__


def test_license_is_the_apache_text() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License")
    assert "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text


def test_orjson_is_no_run_time_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(dep.startswith("orjson") for dep in project["dependencies"])
    bench = ROOT / "acp_fast" / "_bench"  # its raw peers come with the bench extra
    used = [
        path.relative_to(ROOT)
        for path in (ROOT / "acp_fast").rglob("*.py")
        if bench not in path.parents and "orjson" in path.read_text(encoding="utf-8")
    ]
    assert used == []
    extras = project["optional-dependencies"]
    assert any(dep.startswith("orjson") for dep in extras["bench"])


def test_the_installed_metadata_names_its_urls_and_tested_pythons() -> None:
    metadata = importlib.metadata.metadata("acp-fast")
    urls = dict(entry.split(", ", 1) for entry in metadata.get_all("Project-URL") or [])
    assert urls and all(url.startswith("https://") for url in urls.values())
    classifiers = metadata.get_all("Classifier") or []
    assert {f"Programming Language :: Python :: 3.{minor}" for minor in (10, 11, 12, 13)} <= set(
        classifiers
    )
    assert "Typing :: Typed" in classifiers
