"""Build the compiled core; all metadata lives in pyproject.toml.

Each hot module of acp_fast._core is one typed ``_<name>_py.py`` source. Cython
compiles that same file under the name ``_<name>_c``, taking C declarations
from the augmenting ``_<name>_c.pxd``; the ``_py`` module stays importable as
the pure-Python fallback.

A build that cannot compile (no C compiler, no Python headers, no Cython, an
interpreter other than CPython) installs the pure-Python core instead, with a
one-line notice: ``pip install`` never fails for want of a compiler. The
distribution is then a pure ``py3-none-any`` one.

Environment switches, read here only:
  ACP_FAST_NO_EXTENSIONS=1  build nothing (pure-Python install)
  ACP_FAST_STRICT_BUILD=1   Cython warnings are errors, and a failed compile
                            fails the build instead of falling back (CI)
  ACP_FAST_DEBUG_BUILD=1    -O0 -g and an annotated HTML next to each source
"""

from __future__ import annotations

import os
import platform
import sys

from setuptools import Distribution, Extension, setup
from setuptools.command.build_ext import build_ext

CORE_MODULES = ("events", "framing", "messages", "requests")


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


STRICT = _flag("ACP_FAST_STRICT_BUILD")


def _notice(reason: str) -> None:
    print(f"*** acp_fast: installing the pure-Python core ({reason}) ***", file=sys.stderr)


def _extensions() -> list[Extension]:
    """The compiled modules to try, from their ``.py`` sources (see OptionalBuildExt)."""
    if _flag("ACP_FAST_NO_EXTENSIONS"):
        _notice("ACP_FAST_NO_EXTENSIONS is set")
        return []
    if platform.python_implementation() != "CPython":
        _notice(f"{platform.python_implementation()} runs it as fast as it runs Python")
        return []
    try:
        import Cython  # noqa: F401
    except ImportError:
        if STRICT:
            raise
        _notice("Cython is not installed")
        return []
    compile_args = ["-O0", "-g3"] if _flag("ACP_FAST_DEBUG_BUILD") else ["-O3"]
    return [
        Extension(
            f"acp_fast._core._{name}_c",
            [f"acp_fast/_core/_{name}_py.py"],
            extra_compile_args=compile_args,
        )
        for name in CORE_MODULES
    ]


def _cythonize(extensions: list[Extension]) -> list[Extension]:
    from Cython.Build import cythonize
    from Cython.Compiler import Options

    # In CI, Cython warnings are errors: a .pxd that disagrees with its .py
    # must not build quietly into something slower or different. A user's
    # build never fails on a warning a newer Cython adds.
    Options.warning_errors = STRICT
    return list(
        cythonize(
            extensions,
            annotate=_flag("ACP_FAST_DEBUG_BUILD"),
            # The .pxd of a pure-Python source is not a dependency cythonize
            # sees, so always regenerate: a stale C file would hide a .pxd edit.
            force=True,
            quiet=True,
            compiler_directives={
                "language_level": 3,
                "embedsignature": True,
                # C types come from the .pxd only. The .py annotations are for
                # type checkers and say "int" where the .pxd says Py_ssize_t.
                "annotation_typing": False,
            },
        )
    )


class OptionalBuildExt(build_ext):
    """Compile the core if this machine can; otherwise leave it out.

    The pure-Python modules are always installed, and ``acp_fast._core``
    picks them when the compiled ones are missing.
    """

    failed = False

    def finalize_options(self) -> None:
        super().finalize_options()
        # The modules compile side by side (pip passes no -j).
        if not self.parallel:
            self.parallel = os.cpu_count() or 1

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler at all, or a broken toolchain
            self._fall_back(exc)

    def build_extensions(self) -> None:
        # Cython runs only once a compiler has been seen to work: without one
        # the pure fallback should not wait for C it cannot compile.
        try:
            self._probe_compiler()
            # Keep setuptools' own Extension objects (it has annotated them):
            # only their sources change, from .py to the generated .c.
            generated = {ext.name: ext.sources for ext in _cythonize(list(self.extensions))}
            for ext in self.extensions:
                ext.sources = generated[ext.name]
        except Exception as exc:
            self._fall_back(exc)
            return
        super().build_extensions()

    def _probe_compiler(self) -> None:
        """Compile a file that includes Python.h, as the real modules do."""
        import tempfile

        with tempfile.TemporaryDirectory() as folder:
            source = os.path.join(folder, "probe.c")
            with open(source, "w") as file:
                file.write("#include <Python.h>\nint acp_fast_probe(void) { return 0; }\n")
            self.compiler.compile([source], output_dir=folder, include_dirs=self.include_dirs)

    def build_extension(self, ext: Extension) -> None:
        if self.failed:
            return
        try:
            super().build_extension(ext)
        except Exception as exc:  # CCompilerError, DistutilsExecError, missing headers...
            self._fall_back(exc)

    def _fall_back(self, exc: BaseException) -> None:
        if STRICT:
            raise exc
        if not self.failed:
            last = str(exc).strip().splitlines()[-1:] or [""]
            _notice(f"the C build failed: {type(exc).__name__}: {last[0][:100]}")
        self.failed = True
        # Every core module compiled, or none: remove what did build.
        for ext in self.extensions:
            path = self.get_ext_fullpath(ext.name)
            if os.path.exists(path):
                os.remove(path)


class CoreDistribution(Distribution):
    """Platform-specific only when a compiled core is part of it."""

    def has_ext_modules(self) -> bool:
        return bool(self.ext_modules)


setup(
    ext_modules=_extensions(),
    cmdclass={"build_ext": OptionalBuildExt},
    distclass=CoreDistribution,
)
