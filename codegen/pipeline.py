"""The generator's targets and the whole pipeline for one of them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from codegen import class_api, generate, load, preprocess, render
from codegen.formatting import ruff_format
from codegen.ir import ModuleIR

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
    return _build(inp)[0]


def _build(inp: load.SchemaInput) -> tuple[str, ModuleIR]:
    prepared = preprocess.preprocess(inp)
    return render.render(prepared, generate.run(prepared.schema)), prepared.ir


def build(
    schema_dir: Path = SCHEMA_DIR,
    targets: tuple[Target, ...] = TARGETS,
    progress: Callable[[str], None] | None = None,
) -> dict[Path, str]:
    """Every target's text, keyed by its path relative to the repository root.

    ``progress`` is told the name of each module before it is generated. With
    every target built, the class API's method module comes too (it is made
    from the method lists of all four).
    """
    out = {}
    irs: dict[Target, ModuleIR] = {}
    for number, target in enumerate(targets, 1):
        if progress is not None:
            progress(f"[{number}/{len(targets)}] {target.module}")
        inp = load.load(schema_dir, target.major, unstable=target.unstable, fallback_dir=SCHEMA_DIR)
        out[target.path], irs[target] = _build(inp)
    if set(TARGETS) <= set(irs):
        stable = {t.major: ir for t, ir in irs.items() if not t.unstable}
        unstable = {t.major: ir for t, ir in irs.items() if t.unstable}
        class_api.check_names()
        out[Path(class_api.PATH)] = ruff_format(class_api.render(stable, unstable))
    return out
