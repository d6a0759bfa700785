"""The benchmarks behind ``acp-fast bench`` (see ``_runner``).

Inside the package so that an installed acp_fast can run them; the
pytest-benchmark suites in the repository's ``benchmarks/`` reuse the same
workloads.
"""

from __future__ import annotations
