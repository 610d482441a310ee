"""Progress on stderr (issue #18): each stage with its elapsed time on a terminal,
nothing when stderr is piped or --quiet."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from planner.cli import common


def _run_stage(monkeypatch, terminal: bool, quiet: bool = False) -> str:
    out = io.StringIO()
    monkeypatch.setattr(common, "err", Console(file=out, force_terminal=terminal,
                                               width=120, highlight=False))
    monkeypatch.setitem(common.QUIET, "on", quiet)
    with common.show_stage("loading data") as stage:
        stage.update("loading data: 3 tables")
    return out.getvalue()


def test_a_stage_ends_with_its_elapsed_time_on_a_terminal(monkeypatch):
    text = _run_stage(monkeypatch, terminal=True)
    assert "done" in text and "loading data" in text and " s)" in text


def test_piped_or_quiet_stderr_gets_no_progress(monkeypatch):
    assert _run_stage(monkeypatch, terminal=False) == ""
    assert _run_stage(monkeypatch, terminal=True, quiet=True) == ""


@pytest.mark.parametrize("command", ["solve", "whatif", "validate", "offers", "generate"])
def test_a_flags_help_shows_no_value_to_give(command):
    # an outside audit: every --help listed `--json <bool>`, `--quiet <bool>`, `--help
    # <bool>`, and `--json true` then failed as an unexpected extra argument
    from typer.testing import CliRunner

    from planner.cli import app

    res = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "160"})
    assert res.exit_code == 0 and "--help" in res.output
    assert "<bool>" not in res.output
