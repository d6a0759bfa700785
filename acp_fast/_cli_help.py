"""The ``acp-fast`` parser's help formatter and ``--version`` action.

Apart from ``_cli`` so that argparse is imported only when a parser is built.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

__all__ = ("HelpFormatter", "VersionAction")


class HelpFormatter(argparse.HelpFormatter):
    """Descriptions wrap to the terminal; the examples keep their lines."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("examples:"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


class VersionAction(argparse.Action):
    """``--version``: prints the version, the core and the Python, then exits."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print version, core and Python")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from ._cli import version_text

        print(version_text())
        parser.exit()
