"""The ``strip`` command: copy upstream schemas into ``schema/`` without prose.

``schema/<major>/`` then holds the protocol's structure (definitions, names, types,
``required``, enums, ``x-*`` annotations, defaults) in upstream key order, plus a
``VERSION`` file naming the upstream release.  Updating the schema is::

    python -m codegen strip --from /path/to/upstream --version v1=1.21.0 --version v2=2.0.0-alpha.3
    python -m codegen
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from codegen.load import InputError, dump_json, read_json, strip_prose

MAJORS: Final = ("v1", "v2")
FILES: Final = ("schema.json", "schema.unstable.json", "meta.json", "meta.unstable.json")


def stripped_files(source: Path, releases: dict[str, str]) -> dict[Path, str]:
    """Map each path relative to ``schema/`` to its stripped text."""
    out: dict[Path, str] = {}
    for major in MAJORS:
        for name in FILES:
            data = read_json(source / major / name)
            out[Path(major) / name] = dump_json(strip_prose(data))
        release = releases.get(major)
        if release is None:
            raise InputError(f"no release for {major}: pass --version {major}=X.Y.Z")
        out[Path(major) / "VERSION"] = release + "\n"
    return out


def resolve_releases(source: Path, target: Path, given: dict[str, str]) -> dict[str, str]:
    """Releases from ``--version``, else the source's VERSION, else the target's."""
    releases = dict(given)
    for major in MAJORS:
        for base in (source, target):
            path = base / major / "VERSION"
            if major not in releases and path.is_file():
                releases[major] = path.read_text(encoding="utf-8").strip()
    return releases


def write(target: Path, files: dict[Path, str]) -> list[Path]:
    """Write the files that changed; return their paths."""
    changed = []
    for rel, text in sorted(files.items()):
        path = target / rel
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        changed.append(path)
    return changed
