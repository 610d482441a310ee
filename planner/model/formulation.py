"""The formulation as a reader sees it, written from where each rule is built.

The variables are listed in planner.model.builder's docstring, each rule in the
docstring of the `ModelBuilder` method that makes its rows (tests/test_formulation.py
holds every family of rows to that). This joins them, in the builder's order, into the
README's section "The formulation", so the documentation of the math cannot drift from
the code that builds it:

    python -m planner.model.formulation          # print it
    python -m planner.model.formulation --readme # rewrite README.md's section
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

from planner.model import builder

# The methods that make rows or costs, in the order a model is built.
RULES = ("add_demand", "add_replicas", "add_committed_capacity", "add_offer_capacity",
         "add_commitment_capacity", "add_minimum_commitment",
         "add_whole_commitment_instances", "add_spot_share", "add_single_region",
         "add_costs")

BEGIN = "<!-- formulation: written by `python -m planner.model.formulation --readme` -->"
END = "<!-- formulation ends -->"
README = Path(__file__).resolve().parents[2] / "README.md"


def formulation() -> str:
    """The variables, then each rule, as Markdown (code blocks as written)."""
    head = inspect.getdoc(builder)
    variables = head[head.index("Index names"):head.index("Every rule is")].strip()
    parts = [_block(variables)]
    for name in RULES:
        parts.append(_block(inspect.getdoc(getattr(builder.ModelBuilder, name))))
    return "\n\n".join(parts) + "\n"


def _block(text: str) -> str:
    return f"```text\n{text}\n```"


def readme_with(text: str, readme: str) -> str:
    """`readme` with the part between the markers replaced by `text`."""
    start, end = readme.index(BEGIN) + len(BEGIN), readme.index(END)
    return f"{readme[:start]}\n{text}{readme[end:]}"


def main(argv: list[str]) -> None:
    text = formulation()
    if argv == ["--readme"]:
        README.write_text(readme_with(text, README.read_text()))
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
