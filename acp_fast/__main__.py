"""``python -m acp_fast`` is the ``acp-fast`` command."""

from __future__ import annotations

from ._cli import main

raise SystemExit(main())
