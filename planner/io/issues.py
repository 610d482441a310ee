"""Problems found in a scenario: where (table, row, column) and what."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Issue:
    severity: str  # "error" or "warning"
    table: str  # the file or sheet the user knows, or "scenario"
    row: int | None  # row number as the user sees it (header = 1)
    column: str | None
    message: str

    def __str__(self) -> str:
        where = self.table
        if self.row is not None:
            where += f" row {self.row}"
        if self.column:
            where += f" column {self.column}"
        return f"{self.severity}: {where}: {self.message}"


class ScenarioError(Exception):
    """Raised when a scenario has errors; carries every issue found."""

    def __init__(self, issues: list[Issue]):
        self.issues = issues
        errors = [i for i in issues if i.severity == "error"]
        super().__init__(f"{len(errors)} error(s) in the scenario")
