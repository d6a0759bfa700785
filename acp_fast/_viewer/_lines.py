"""The viewer's events inside its page (docs/tracing.md, "The viewer").

``embed`` makes the joined events safe as the text of the page's
``<script type="application/json">`` element.
"""

from __future__ import annotations

__all__ = ("embed",)

# Inside <script>, "</script>" ends the element and "<!--" can keep a later
# "</script>" from ending it; & and U+2028/U+2029 are escaped too, so the
# JSON means the same in any HTML or JS context. JSON has these characters
# only inside strings, where \uXXXX is the same character.
_EMBED = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def embed(events_json: str) -> str:
    """``events_json`` as the text of a ``<script>`` element: the same JSON."""
    for char, escape in _EMBED:
        events_json = events_json.replace(char, escape)
    return events_json
