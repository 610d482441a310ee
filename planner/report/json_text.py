"""JSON text for stdout (the --json of every command), kept light: no pandas."""

from __future__ import annotations

import json
import math


def dumps(data) -> str:
    """`data` as JSON text for stdout: a value that is not a number (NaN, an infinity;
    pandas' blank) is null, as JSON has no such numbers (`json.dumps` would write NaN,
    which strict parsers refuse); numpy numbers as numbers."""
    def clean(x):
        if isinstance(x, float):
            return x if math.isfinite(x) else None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        return x

    return json.dumps(clean(data), indent=2, default=float, allow_nan=False) + "\n"
