"""Every deliberate deviation from the upstream ACP schema, each with its reason.

The rest of the generator applies these tables; nothing else in ``codegen`` may
special-case a definition by name.
"""

from __future__ import annotations

from typing import Final

#: Keywords that carry only prose.  ``schema/`` keeps the protocol's structure
#: without them, and the generator ignores them so upstream files give the same output.
PROSE_KEYWORDS: Final[frozenset[str]] = frozenset({"description", "examples", "$comment"})

#: Definitions carrying this annotation are the JSON-RPC envelope unions
#: (``AgentRequest``, ``ClientResponse``, ...).  Their ``params``/``result`` unions do not
#: tie a method name to its payload, so dispatch goes through the generated ``METHODS``
#: table instead and the envelopes get no classes.
ENVELOPE_MARKER: Final = "x-docs-ignore"

#: Keywords dropped from every schema node before generation, with the reason.
DROPPED_KEYWORDS: Final[dict[str, str]] = {
    "default": "an omitted field stays omitted when re-encoded; its default is UNSET",
    "title": "class names come from $defs keys and codegen.naming, not from titles",
    "not": "only used to exclude known tags from an open union's catch-all branch",
    "unevaluatedProperties": "unknown fields are ignored on decode anyway",
    "discriminator": "tags are found from the `const` of each branch instead",
    "format": "`date-time`/`uri` stay `str` to round-trip byte for byte; integer formats "
    "(uint16, int64) say no more than minimum/maximum do",
    "contentEncoding": "base64 payloads stay text; decoding them is the application's choice",
}

#: Class names for union variants whose default name (``<Union><Tag>``, see
#: ``codegen.naming.variant_class``) would collide with an unrelated definition.
#: Keyed by ``(union definition, tag value)``.  Empty while no collision exists.
VARIANT_NAMES: Final[dict[tuple[str, str], str]] = {}
