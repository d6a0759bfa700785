"""Command line of the generator.

::

    python -m codegen                      # regenerate acp_fast/schema/v*.py from schema/
    python -m codegen --check              # exit 1 and list stale files (CI)
    python -m codegen --schema-dir DIR     # generate from another copy (e.g. upstream)
    python -m codegen --out DIR            # write the modules into DIR instead
    python -m codegen strip --from DIR --version v1=1.21.0 --version v2=2.0.0-alpha.3
                                           # refresh schema/ from upstream files
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Sequence
from pathlib import Path

#: The tree this package lives in (``pipeline.ROOT``, without importing the
#: generator's dependencies before they are known to be there).
ROOT = Path(__file__).resolve().parent.parent
#: What the 'codegen' extra installs, by import name.
NEEDS = ("datamodel_code_generator", "jsonschema", "ruff")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m codegen",
        description="Regenerate the typed ACP bindings (acp_fast/schema/v*.py) from schema/.",
    )
    parser.add_argument(
        "--schema-dir",
        type=Path,
        default=ROOT / "schema",
        help="input directory in the upstream layout (default: schema/)",
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=ROOT,
        help="tree whose acp_fast/schema/ is written or checked (default: this repository)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="directory for the generated modules (default: ROOT/acp_fast/schema)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if a generated file differs from a fresh generation",
    )
    sub = parser.add_subparsers(dest="command")
    cmd = sub.add_parser("strip", help="copy upstream schemas into schema/ without prose")
    cmd.add_argument("--from", dest="source", type=Path, required=True, help="upstream directory")
    cmd.add_argument(
        "--to",
        dest="target",
        type=Path,
        default=ROOT / "schema",
        help="directory to write (default: schema/)",
    )
    cmd.add_argument(
        "--version",
        action="append",
        default=[],
        metavar="MAJOR=RELEASE",
        help="upstream release of a major version, e.g. v1=1.21.0",
    )
    cmd.add_argument("--check", dest="strip_check", action="store_true", help="write nothing")
    return parser


def generate(schema_dir: Path, root: Path, *, check: bool, out: Path | None = None) -> int:
    from codegen import pipeline

    started = time.perf_counter()
    _progress(f"generating from {schema_dir}")
    files = pipeline.build(schema_dir, progress=_progress)
    stale = []
    for rel, text in files.items():
        path = root / rel if out is None else out / rel.name
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current == text:
            continue
        stale.append(rel)
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    elapsed = time.perf_counter() - started
    if check:
        for rel in stale:
            print(f"stale: {rel} (regenerate with `python -m codegen`)", file=sys.stderr)
        return 1 if stale else 0
    for rel in stale:
        print(f"wrote {rel}")
    print(f"{len(files)} modules, {len(stale)} changed, {elapsed:.1f}s")
    return 0


def _progress(text: str) -> None:
    # On stderr: stdout lists what was written, for scripts.
    print(f"codegen: {text}", file=sys.stderr, flush=True)


def run_strip(args: argparse.Namespace) -> int:
    from codegen import strip
    from codegen.load import InputError

    given = {}
    for item in args.version:
        major, sep, release = item.partition("=")
        if not sep or major not in strip.MAJORS or not release:
            raise InputError(f"--version expects MAJOR=RELEASE with MAJOR in {strip.MAJORS}")
        given[major] = release
    releases = strip.resolve_releases(args.source, args.target, given)
    files = strip.stripped_files(args.source, releases)
    if args.strip_check:
        stale = [rel for rel, text in sorted(files.items()) if _read(args.target / rel) != text]
        for rel in stale:
            print(f"stale: {args.target / rel}", file=sys.stderr)
        return 1 if stale else 0
    for path in strip.write(args.target, files):
        print(f"wrote {path}")
    return 0


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    missing = [name for name in NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        print(
            f"codegen: needs the 'codegen' extra ({', '.join(missing)} missing): "
            "pip install -e '.[codegen]'",
            file=sys.stderr,
        )
        return 2
    from codegen.load import InputError

    try:
        if args.command == "strip":
            return run_strip(args)
        return generate(args.schema_dir, args.root, check=args.check, out=args.out)
    except InputError as exc:
        print(f"codegen: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
