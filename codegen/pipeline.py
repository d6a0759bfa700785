"""The generator's targets and the whole pipeline for one of them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from codegen import generate, load, preprocess, render

#: Repository root (``codegen/`` lives in it).
ROOT: Final = Path(__file__).resolve().parent.parent
#: The committed, prose-free schemas.
SCHEMA_DIR: Final = ROOT / "schema"


@dataclass(frozen=True)
class Target:
    """One generated module."""

    major: str
    unstable: bool

    @property
    def module(self) -> str:
        return self.major + ("_unstable" if self.unstable else "")

    @property
    def path(self) -> Path:
        """Path relative to the repository root."""
        return Path("acp_fast") / "schema" / f"{self.module}.py"


TARGETS: Final = (
    Target("v1", unstable=False),
    Target("v1", unstable=True),
    Target("v2", unstable=False),
    Target("v2", unstable=True),
)


def build_module(inp: load.SchemaInput) -> str:
    """Schema in, module text out: preprocess → datamodel-code-generator → render."""
    prepared = preprocess.preprocess(inp)
    return render.render(prepared, generate.run(prepared.schema))


def build(
    schema_dir: Path = SCHEMA_DIR,
    targets: tuple[Target, ...] = TARGETS,
    progress: Callable[[str], None] | None = None,
) -> dict[Path, str]:
    """Every target's text, keyed by its path relative to the repository root.

    ``progress`` is told the name of each module before it is generated.
    """
    out = {}
    for number, target in enumerate(targets, 1):
        if progress is not None:
            progress(f"[{number}/{len(targets)}] {target.module}")
        inp = load.load(schema_dir, target.major, unstable=target.unstable, fallback_dir=SCHEMA_DIR)
        out[target.path] = build_module(inp)
    return out
