"""Build-time generator of the typed ACP bindings in ``acp_fast/schema/``.

Never imported by ``acp_fast`` at run time.  The pipeline has one module per stage:

``load``
    Read ``schema*.json`` + ``meta*.json``, drop upstream prose, check the input
    against the JSON Schema meta-schema and against itself (refs, method tables).
``preprocess``
    Rewrite the schema into shapes datamodel-code-generator maps one to one onto
    ``msgspec.Struct`` classes (tags, merged unions, no defaults) and record what the
    rewrite learnt (methods, unions, lenient fields) in the IR (``ir``).
``generate``
    Run datamodel-code-generator with pinned options; it writes the class bodies.
``render`` / ``render_methods``
    Turn its output plus the IR into the final module: banner, class metadata,
    open-union aliases, method and decoding tables, then ``ruff format``.

``naming`` owns every generated name and ``overrides`` every deliberate deviation
from the upstream schema.  ``python -m codegen --help`` lists the commands.
"""

from __future__ import annotations
