"""Stage 3: datamodel-code-generator writes the class bodies.

It runs in-process with the options pinned below, on the preprocessed schema.
Everything it cannot know (tags, methods, open unions) is added by ``render``.
"""

from __future__ import annotations

import warnings
from typing import Any, Final

from codegen.load import InputError, Json

#: The pinned datamodel-code-generator release; other releases may name or order
#: things differently, which ``--check`` would report as drift.
DCG_VERSION: Final = "0.89.0"

#: Base class of every generated Struct (hand-written, see ``acp_fast/schema/_base.py``).
BASE_CLASS: Final = "acp_fast.schema._base.Base"


def options() -> dict[str, Any]:
    """The pinned options (the command-line equivalents are in the comments)."""
    from datamodel_code_generator.enums import DataModelType, InputFileType
    from datamodel_code_generator.format import PythonVersion

    return {
        "input_file_type": InputFileType.JsonSchema,  # --input-file-type jsonschema
        "output_model_type": DataModelType.MsgspecStruct,  # --output-model-type msgspec.Struct
        "target_python_version": PythonVersion.PY_310,  # --target-python-version 3.10
        "base_class": BASE_CLASS,  # --base-class acp_fast.schema._base.Base
        "enum_field_as_literal": "all",  # --enum-field-as-literal all
        "snake_case_field": True,  # --snake-case-field
        "remove_special_field_name_prefix": True,  # --remove-special-field-name-prefix (_meta → meta)
        "keyword_only": True,  # --keyword-only
        "keep_model_order": True,  # --keep-model-order (the renderer orders by dependencies)
        "disable_timestamp": True,  # --disable-timestamp
        "formatters": [],  # --no-formatters (the renderer re-prints and runs ruff format)
    }


def check_version() -> None:
    from datamodel_code_generator import get_version

    found = get_version()
    if found != DCG_VERSION:
        raise InputError(
            f"datamodel-code-generator {found} is installed; the generator pins {DCG_VERSION} "
            "(pip install -e '.[codegen]')"
        )


def run(schema: Json) -> str:
    """Return datamodel-code-generator's module for ``schema``."""
    import datamodel_code_generator

    check_version()
    with warnings.catch_warnings():
        # It warns about unions msgspec cannot decode and unknown integer formats;
        # the renderer replaces those unions and formats were dropped on purpose.
        warnings.simplefilter("ignore")
        out = datamodel_code_generator.generate(schema, **options())
    if not isinstance(out, str):
        raise InputError("datamodel-code-generator returned no single module")
    return out
