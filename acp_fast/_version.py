"""The one place the version is written; packaging reads it from here."""

from __future__ import annotations

__version__ = "0.1.0"
