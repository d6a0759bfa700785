"""Every name the generator invents.

Classes keep their ``$defs`` names.  The classes the schema only implies get
predictable names built from the definition they belong to, so they never change
when unrelated definitions are added upstream:

* a tagged union variant is ``<Union><Tag>``: ``ContentBlock`` + ``"resource_link"``
  gives ``ContentBlockResourceLink``, ``SessionUpdate`` + ``"agent_message_chunk"``
  gives ``SessionUpdateAgentMessageChunk``;
* an untagged branch with fields of its own is ``<Union><Title>`` (``"value_id"``
  gives ``SetSessionConfigOptionRequestValueId``);
* the fields every unknown variant of an open union must carry form ``<Union>Other``
  (the upstream branch is titled ``other``);
* the item union of a ``list[A] | list[B]`` definition is ``<Definition>Item``.
"""

from __future__ import annotations

import builtins
import keyword
import re
from typing import Final

from codegen.overrides import VARIANT_NAMES

_WORD: Final = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def pascal(text: str) -> str:
    """``"agent_message_chunk"`` → ``"AgentMessageChunk"``, ``"searchAndReplace"`` →
    ``"SearchAndReplace"``, ``"date-time"`` → ``"DateTime"``."""
    words = _WORD.findall(text)
    if not words:
        raise ValueError(f"cannot build a class name from {text!r}")
    return "".join(word[:1].upper() + word[1:] for word in words)


def variant_class(union: str, tag: str) -> str:
    """Class name of the ``tag`` variant of a tagged union."""
    return VARIANT_NAMES.get((union, tag)) or union + pascal(tag)


def branch_class(union: str, title: str) -> str:
    """Class name of an untagged union branch that needs a class of its own."""
    return union + pascal(title)


def other_class(union: str) -> str:
    """Class validating what every unknown variant of an open union must carry."""
    return union + "Other"


def item_union(definition: str) -> str:
    """Item union of a ``list[A] | list[B]`` definition."""
    return definition + "Item"


#: Names the generated modules use at module level; a field with one of these
#: names would shadow it inside its class body.
MODULE_NAMES: Final = frozenset(
    {
        "Annotated",
        "Any",
        "ClassVar",
        "Final",
        "Literal",
        "Meta",
        "TYPE_CHECKING",
        "TypeAlias",
        "UNSET",
        "UnsetType",
        "builtins",
        "field",
        "msgspec",
    }
)

BUILTIN_NAMES: Final = frozenset(name for name in dir(builtins) if not name.startswith("_"))


def check_attribute(name: str) -> None:
    """Fail loudly on attribute names the renderer cannot make safe."""
    if keyword.iskeyword(name) or not name.isidentifier():
        raise ValueError(f"generated attribute {name!r} is not a valid identifier")
    if name in MODULE_NAMES:
        raise ValueError(f"attribute {name!r} would shadow a module-level name; rename it")
