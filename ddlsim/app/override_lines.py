"""The override lines a sweep repeats with new numbers (``model.target_loss=2.574``,
``parallel.data=16``), parsed without Hydra's grammar.

Hydra's parser (ANTLR) takes about 0.3 ms a line, a tenth of a warm configuration, and every point
of a sweep brings new lines. `simple_override` recognises the plainest form of its grammar only: a
dotted key of identifiers, ``=``, and a value that is one token of the grammar with one meaning:
a decimal integer (``INT``: no sign-less leading zero, no ``_``), a decimal fraction with digits on
both sides of the point (``FLOAT``), or an identifier (``ID``) that is not ``true``, ``false``,
``null``, ``inf`` or ``nan`` in any case. It returns the `Override` Hydra's parser returns for that
line (`tests/app/test_override_lines.py` compares them on a grid), and None for anything else,
which Hydra parses.
"""

from __future__ import annotations

import re

from hydra.core.override_parser.types import Override, OverrideType, ValueType

_LINE = re.compile(r"(?P<key>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)="
                   r"(?:(?P<int>[+-]?(?:0|[1-9][0-9]*))|(?P<float>[+-]?(?:0|[1-9][0-9]*)\.[0-9]+)"
                   r"|(?P<id>[A-Za-z_][A-Za-z0-9_]*))")
_KEYWORDS = ("true", "false", "null", "inf", "nan")  # tokens of the grammar that an identifier's text would match


def simple_override(line: str) -> Override | None:
    """Hydra's `Override` of `line` when it is a plain ``key=value`` of the forms above, else None."""
    match = _LINE.fullmatch(line)
    if match is None:
        return None
    if match["int"] is not None:
        value: int | float | str = int(match["int"])
    elif match["float"] is not None:
        value = float(match["float"])
    elif match["id"].lower() in _KEYWORDS:
        return None
    else:
        value = match["id"]
    return Override(type=OverrideType.CHANGE, key_or_group=match["key"], value_type=ValueType.ELEMENT, _value=value,
                    package=None, input_line=line)
