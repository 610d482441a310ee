"""CSV the product writes for people to open (FOCUS charges, `offers` and `latency`
listings): text from the input never becomes a formula (SPEC §5). A spreadsheet reads a
cell starting with =, +, -, @ or a tab as a formula, quoted or not, so such text gets a
leading apostrophe (OWASP's rule against CSV injection): a provider named `=2+3` had
shown 5. Numbers, and text that reads as one (-0.5), are written as they are. Tables the
planner reads back (a scenario's CSV files) are not written through this."""

from __future__ import annotations

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def as_text(value):
    """`value`, with an apostrophe before text a spreadsheet would take for a formula."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _number(value):
        return "'" + value
    return value


def safe_row(row: dict) -> dict:
    """`row` with every value through `as_text`."""
    return {key: as_text(value) for key, value in row.items()}


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
