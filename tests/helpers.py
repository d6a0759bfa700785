"""Helpers shared by tests (importable as ``tests.helpers``)."""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from functools import cached_property
from types import ModuleType
from typing import Any

NO_EXTENSIONS = os.environ.get("ACP_FAST_NO_EXTENSIONS", "") not in ("", "0")


@dataclass(frozen=True)
class CoreImpl:
    """One implementation of the sans-IO core: its modules by role."""

    tag: str

    def _module(self, name: str) -> ModuleType:
        return importlib.import_module(f"acp_fast._core._{name}_{self.tag}")

    @cached_property
    def events(self) -> ModuleType:
        return self._module("events")

    @cached_property
    def framing(self) -> ModuleType:
        return self._module("framing")

    @cached_property
    def messages(self) -> ModuleType:
        return self._module("messages")

    @cached_property
    def requests(self) -> ModuleType:
        return self._module("requests")

    def __getattr__(self, name: str) -> Any:
        for module in (self.framing, self.messages, self.requests, self.events):
            if hasattr(module, name):
                return getattr(module, name)
        raise AttributeError(name)
