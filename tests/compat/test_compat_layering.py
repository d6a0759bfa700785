"""acp_fast.compat sits on acp_fast alone: it never imports the official SDK."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

COMPAT = Path(__file__).resolve().parent.parent.parent / "acp_fast" / "compat"


def test_no_module_of_compat_imports_the_official_sdk():
    for path in COMPAT.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] not in ("acp", "pydantic"), f"{path.name} imports {name}"


def test_importing_compat_loads_neither_the_official_sdk_nor_pydantic():
    code = "import sys, acp_fast.compat; print(sorted({'acp', 'pydantic'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
