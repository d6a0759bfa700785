"""Build the compiled core; all metadata lives in pyproject.toml.

Each hot module of acp_fast._core is one typed ``_<name>_py.py`` source. Cython
compiles that same file under the name ``_<name>_c``, taking C declarations
from the augmenting ``_<name>_c.pxd``; the ``_py`` module stays importable as
the pure-Python fallback.

Environment switches, read here only:
  ACP_FAST_NO_EXTENSIONS=1  build nothing (pure-Python install)
  ACP_FAST_DEBUG_BUILD=1    -O0 -g and an annotated HTML next to each source
"""

from __future__ import annotations

import os
import platform

from setuptools import Extension, setup

CORE_MODULES = ("framing", "messages", "requests")


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


def _extensions() -> list[Extension]:
    if _flag("ACP_FAST_NO_EXTENSIONS") or platform.python_implementation() != "CPython":
        print("*** acp_fast: pure-Python build (no compiled core) ***")
        return []
    from Cython.Build import cythonize
    from Cython.Compiler import Options

    # Cython warnings are errors: a .pxd that disagrees with its .py must not
    # build quietly into something slower or different.
    Options.warning_errors = True
    debug = _flag("ACP_FAST_DEBUG_BUILD")
    compile_args = ["-O0", "-g3"] if debug else ["-O3"]
    extensions = [
        Extension(
            f"acp_fast._core._{name}_c",
            [f"acp_fast/_core/_{name}_py.py"],
            extra_compile_args=compile_args,
        )
        for name in CORE_MODULES
    ]
    return cythonize(
        extensions,
        annotate=debug,
        # The .pxd of a pure-Python source is not a dependency cythonize sees,
        # so always regenerate: a stale C file would hide a .pxd edit.
        force=True,
        compiler_directives={
            "language_level": 3,
            "embedsignature": True,
            # C types come from the .pxd only. The .py annotations are for
            # type checkers and say "int" where the .pxd says Py_ssize_t.
            "annotation_typing": False,
        },
    )


setup(ext_modules=_extensions())
