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


class Collector:
    """Every problem found, collected as it is found: a check reports and goes on, so
    that the user sees every problem at once (SPEC §3)."""

    def __init__(self, issues: list[Issue]):
        self.issues = issues
        # cells with an error: a formula with no saved value, found on reading, is not
        # also reported as blank
        self.in_error = {(i.table, i.row, i.column) for i in issues if i.severity == "error"}

    def error(self, table: str, row: int | None, column: str | None, message: str):
        self.issues.append(Issue("error", table, row, column, message))
        self.in_error.add((table, row, column))

    def warn(self, table: str, row: int | None, column: str | None, message: str):
        self.issues.append(Issue("warning", table, row, column, message))
