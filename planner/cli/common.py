"""What every command shares: the app, stderr, exit statuses, loading a scenario with its
problems listed, output paths checked before any work, names matched in any case, and
the guard that turns Ctrl-C and unexpected errors into one line and an exit status."""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from planner import interrupt
from planner.cluster import ClusterError, ClusterUnusable, address_problem
from planner.io.issues import Issue, ScenarioError


def _flags_show_no_type() -> None:
    """A flag's help shows no type: typer 0.29 lists `--json <bool>`, `--help <bool>`
    as if they took a value (an outside audit: `--json true` then fails as an extra
    argument)."""
    from typer.core import TyperOption

    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "flags_show_no_type", False):
        return

    def display_type_rich(self, ctx):
        return None if self.is_flag else shown(self, ctx)

    display_type_rich.flags_show_no_type = True
    TyperOption.display_type_rich = display_type_rich


_flags_show_no_type()
app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Plan GPU procurement at least cost: what to buy, where, on which term.")
# Not a terminal (a log, CI, a pipe): wide enough that a problem stays on one line.
err = Console(stderr=True, highlight=False,
              width=None if sys.stderr.isatty() or os.environ.get("COLUMNS") else 200)

EXIT_OK, EXIT_ERROR, EXIT_BAD_INPUT, EXIT_NO_PLAN = 0, 1, 2, 3
# When the command started (planner.cli.main), for the time limit's clock; None where the
# app is called otherwise (tests): the clock starts when the command does.
STARTED: float | None = None
# folders made for the running command's outputs, oldest first (check_outputs)
MADE_FOLDERS: list[Path] = []


def process_started() -> float:
    """time.perf_counter()'s reading when this process started (Linux: from /proc; else
    now)."""
    now = time.perf_counter()
    try:
        with open("/proc/self/stat") as f:  # field 22, starttime: clock ticks after boot
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return now - max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return now


# The command's own warnings (not the scenario's), kept as they are said for the
# workbook's Diagnostics sheet and the JSON (SPEC §5: every warning)
SAID: list[str] = []


def warn(text: str) -> None:
    """A warning of the command: on stderr, and kept (SAID)."""
    SAID.append(text)
    err.print(f"[yellow]warning: {escape(text)}[/]")


def command_started() -> float:
    """The time limit's start: the process's command, or now."""
    return STARTED if STARTED is not None else time.perf_counter()


SOLVER_OPTION = typer.Option(None, "--solver", help="highs (default) or cbc")
GAP_OPTION = typer.Option(None, "--gap", help="relative MIP gap (default: the setting)")


def default_scenario() -> Path:
    """`data/` of the working directory if it holds a scenario, else the one shipped."""
    here = Path("data")
    if (here / "settings.csv").exists():
        return here
    return Path(__file__).resolve().parents[2] / "data"


def print_issues(issues: list[Issue], scenario: str) -> None:
    """Every problem: a table on a terminal; elsewhere (a log, CI, a pipe) one line
    each, whole whatever the width, so that it can be searched for."""
    if issues and err.is_terminal:
        table = Table(title=escape(f"Problems in {scenario}"), show_lines=False, expand=False)
        for col in ("", "table", "row", "column", "problem"):
            table.add_column(col, overflow="fold")
        for i in issues:
            mark = "[red]error[/]" if i.severity == "error" else "[yellow]warning[/]"
            table.add_row(mark, Text(i.table), "" if i.row is None else str(i.row),
                          Text(i.column or ""), Text(i.message))
        err.print(table)
    else:
        for i in issues:
            where = ", ".join([i.table] + [f"row {i.row}"] * (i.row is not None)
                              + [f"column {i.column}"] * bool(i.column))
            err.print(f"{i.severity}: {where}: {i.message}", markup=False, soft_wrap=True)
    errors = sum(1 for i in issues if i.severity == "error")
    warnings = len(issues) - errors
    verdict = "[red]not valid[/]" if errors else "[green]valid[/]"
    err.print(f"{escape(str(scenario))}: {verdict} — {errors} error(s), {warnings} warning(s)")


def load_valid(path: Path):
    from planner.io.validate import load_scenario

    try:
        scenario = load_scenario(path)
    except ScenarioError as e:
        print_issues(e.issues, str(path))
        raise typer.Exit(EXIT_BAD_INPUT) from None
    return scenario


def say_warnings(scenario) -> None:
    """The scenario's warnings on stderr (SPEC §2: unknown tables or columns are said,
    never silently used), for every command that reads one."""
    for w in scenario.warnings:
        err.print(f"[yellow]{escape(str(w))}[/]")


def warn_solver(asked: str, used: str) -> None:
    """Say so when the solver asked for did not make the plan: CBC solves models of up
    to WHOLE_CELLS supply cells whole, where its branch and bound has the time for its
    root node and its plan is the cheaper; else the plan is the decomposition's, whose
    LPs and MIPs HiGHS solves."""
    if asked != used:
        from planner.solve.pipeline import WHOLE_CELLS

        warn(f"the plan is {used}'s, not {asked}'s: {asked} solves models of up to "
             f"{WHOLE_CELLS:,} supply cells whole, where its branch and bound has the time "
             f"and makes the cheaper plan; this one is the decomposition's, whose LPs and "
             f"MIPs {used} solves")


def every_problem(*checks: Callable[[], object]) -> list:
    """Run each check (each says its own problems and exits 2), all of them whatever
    the others found, then exit 2 if any did: the options', the outputs' and the
    scenario's problems said in one run (an outside audit had been told of a negative
    --time-limit alone, then of the rest run by run). Returns each check's result."""
    results, bad = [], False
    MADE.clear()  # (a process may run more than one command: the tests)
    for check in checks:
        try:
            results.append(check())
        except typer.Exit as stop:
            if stop.exit_code != EXIT_BAD_INPUT:
                raise
            results.append(None)
            bad = True
    if bad:
        for folder in reversed(MADE):  # innermost first; only where still empty
            with contextlib.suppress(OSError):
                folder.rmdir()
        MADE.clear()
        raise typer.Exit(EXIT_BAD_INPUT)
    return results


def check_solver_options(solver, time_limit, gap) -> str | None:
    """--solver (any case, as the settings table's `solver`), --time-limit and --gap:
    every problem with them said at once (exit 2). Returns the solver's name."""
    problems = []
    if solver is not None and solver.lower() not in ("highs", "cbc"):
        problems.append(f"--solver must be highs or cbc, not '{solver}'")
    for name, value in (("--time-limit", time_limit), ("--gap", gap)):
        if value is not None and not math.isfinite(value):  # typer takes nan and inf
            problems.append(f"{name} must be a number, not {value}")
        elif value is not None and value < 0:
            problems.append(f"{name} must not be negative")
    if time_limit == 0:  # as the settings table's time_limit_s: no budget, no plan in it
        problems.append("--time-limit must be greater than 0")
    if gap is not None and math.isfinite(gap) and gap > 1:  # as the settings' mip_gap
        problems.append(f"--gap is a fraction (0.01 = 1 %), at most 1, not {gap:g}")
    refuse(problems)
    return None if solver is None else solver.lower()


def check_ranges(*ranges: tuple) -> None:
    """Each (option, value, least, most) within its range (None: no such end), every
    problem said at once (exit 2): typer's own min and max had stopped at the first
    option out of range, before the others' and the scenario's problems were said (an
    outside audit: `--samples 0 --demand-spread 11 --cvar-alpha 1`, one said)."""
    problems = []
    for name, value, least, most in ranges:
        if value is None:
            continue
        if not math.isfinite(value):
            problems.append(f"{name} must be a number, not {value}")
        elif (least is not None and value < least) or (most is not None and value > most):
            within = (f"from {least:g} to {most:g}" if least is not None and most is not None
                      else f"at least {least:g}" if least is not None else f"at most {most:g}")
            problems.append(f"{name} must be {within}, not {value:g}")
    refuse(problems)


def refuse(problems: list[str]) -> None:
    """Say every one of the options' `problems` and exit 2, where there are any."""
    for problem in problems:
        err.print(f"[red]error:[/] {escape(problem)}")
    if problems:
        raise typer.Exit(EXIT_BAD_INPUT)


FORMATS = ("table", "csv", "json")


QUIET = {"on": False}  # --quiet: no progress on stderr (results and problems still)
QUIET_OPTION = typer.Option(False, "--quiet", "-q", help="no progress on stderr")


class _Stage:
    """A stage of a command on stderr: while it runs, a spinner with what it does and
    the time elapsed (rich.progress); when it ends, a line with the time it took. Only
    where stderr is a terminal (piped output stays clean) and not --quiet."""

    def __init__(self, text: str):
        self.text = text
        self.live = None

    def __enter__(self):
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.started = time.perf_counter()
        if err.is_terminal and not QUIET["on"]:
            self.live = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                                 TimeElapsedColumn(), console=err, transient=True)
            self.live.start()
            self.task = self.live.add_task(escape(self.text))
        return self

    def update(self, text: str) -> None:
        """Say what the stage is doing now (planning: its round, bound, best plan)."""
        if self.live is not None:
            self.live.update(self.task, description=escape(text))

    def __exit__(self, kind, *exc) -> bool:
        if self.live is not None:
            self.live.stop()
            if kind is None:
                err.print(f"[green]done[/] {escape(self.text)} "
                          f"[dim]({time.perf_counter() - self.started:.1f} s)[/]")
        return False


def show_stage(text: str) -> _Stage:
    """A stage on stderr saying what runs and for how long, which Ctrl-C also names."""
    interrupt.set_stage(text)
    return _Stage(text)


def show_progress(text: str) -> None:
    """A progress line on stderr, unless --quiet."""
    if not QUIET["on"]:
        err.print(text, markup=False, highlight=False)


def guard(fn):
    """Unexpected errors exit 1 with one line; bad input has already exited 2."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        MADE_FOLDERS.clear()
        SAID.clear()
        try:
            return interrupt.run(fn, *args, **kwargs)  # Ctrl-C: exit 130 at once
        except typer.Exit as e:
            if e.exit_code == EXIT_BAD_INPUT:  # nothing written: no folder made for it
                _remove_made_folders()
            raise
        except ClusterError as e:  # (planner.cluster: a scheduler given, or its workers)
            err.print(f"[red]error:[/] {escape(str(e))}")
            bad = isinstance(e, ClusterUnusable)
            if bad:
                _remove_made_folders()
            raise typer.Exit(EXIT_BAD_INPUT if bad else EXIT_ERROR) from None
        except (typer.Abort, KeyboardInterrupt):
            raise
        except BrokenPipeError:  # `planner offers … | head`: the reader has all it wants
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(EXIT_OK) from None
        except Exception as e:  # noqa: BLE001 - the last line of defence
            err.print(f"[red]unexpected error:[/] {type(e).__name__}: {escape(str(e))}")
            if "PLANNER_DEBUG" in os.environ:
                raise
            raise typer.Exit(EXIT_ERROR) from None

    return wrapper


def check_cluster(jobs: int, scheduler: str | None) -> None:
    """--scheduler's address (exit 2 when it is not one, before any work); --jobs beside
    it changes nothing (the cluster's workers do the work): said."""
    if scheduler is None:
        return
    why = address_problem(scheduler)
    if why is not None:
        err.print(f"[red]error:[/] --scheduler {escape(why)}")
        raise typer.Exit(EXIT_BAD_INPUT)
    if jobs > 1:
        warn("--jobs is ignored with --scheduler: the cluster's "
             "workers do the work")


def resolve_name(name: str | None, names, what: str) -> str | None:
    """`name` as the scenario spells it: the name itself where the scenario has it, else
    the one name that matches whatever the case; exit 2 when there is none, or several
    that differ only in case ('tokyo' and 'Tokyo' given as 'TOKYO')."""
    found, problem = name_in(name, names, what)
    refuse([problem] if problem else [])
    return found


def name_in(name: str | None, names, what: str) -> tuple[str | None, str | None]:
    """`resolve_name` that says rather than exits: (the name as the scenario spells it,
    None) or (None, the problem)."""
    if name is None:
        return None, None
    name = name.strip()  # as every cell of the scenario is read (' virginia ' was unknown)
    names = list(names)
    if name in names:
        return name, None
    found = sorted(n for n in names if n.casefold() == name.casefold())
    if len(found) == 1:
        return found[0], None
    return None, (f"{what} '{name}' matches {', '.join(found)}: give one as written"
                  if found else f"unknown {what} '{name}'; {what}s are: "
                  + ", ".join(sorted(names)))


HEADINGS = {"usd_per_gpu_hour": "$/GPU-h", "effective_usd_per_gpu_hour": "effective $/GPU-h",
            "commit_months": "months", "gpus_per_instance": "GPUs/instance",
            "max_gpus": "max GPUs", "lead_time_days": "lead days", "price_date": "price date",
            "rtt_ms": "RTT ms", "usd_per_unit_hour": "$/unit-h"}


def shown_cell(column: str, value) -> str:
    if value is None:
        return ""
    if column.startswith(("usd", "effective")):
        return f"{value:.4f}"
    return f"{value:g}" if isinstance(value, float) else str(value)


# folders the output checks made (SPEC §4 v2: a missing folder is created), taken away
# again where the command then stops for bad input (`every_problem`)
MADE: list[Path] = []


def _writable(path: Path) -> str | None:
    """Why `path` cannot be written, or None (a missing folder is created: SPEC §4 v2)."""
    if path.is_dir():
        return "is a directory"
    parent = path.parent
    for folder in (parent, *parent.parents):
        if folder.exists():
            if not folder.is_dir():
                return f"{folder} is not a directory"
            break
    try:
        missing = [f for f in (parent, *parent.parents) if not f.exists()]
        parent.mkdir(parents=True, exist_ok=True)
        MADE.extend(reversed(missing))  # outermost first
        import tempfile

        with tempfile.NamedTemporaryFile(dir=parent, prefix=".planner-", delete=True):
            pass
    except OSError as e:
        return e.strerror or str(e)
    if path.exists() and not os.access(path, os.W_OK):
        return "permission denied"
    return None


def check_output_folder(folder: Path) -> None:
    """A folder the command writes files into: bad input (exit 2) when it is a file or
    cannot be made; a missing one is created."""
    why = f"{folder} is a file, not a folder" if folder.exists() and not folder.is_dir() \
        else _writable(folder / ".planner-probe")
    if why is not None:
        err.print(f"[red]error:[/] cannot write into {escape(str(folder))}: {escape(why)}")
        raise typer.Exit(EXIT_BAD_INPUT)


def check_outputs(*paths: Optional[Path], scenario: Optional[Path] = None) -> None:
    """The command's output files: bad input (exit 2) when one cannot be written, two are
    the same file, one lies inside another (`-o p.xlsx --focus p.xlsx/f.csv`), or one is
    the scenario itself or one of its tables (the run would overwrite its own input). A
    missing folder is created, and removed again when an output is refused."""
    given = [p for p in paths if p is not None]
    inputs = _scenario_files(scenario) if scenario is not None else set()
    seen: set[Path] = set()
    wholes = [p.resolve() for p in given]
    problems: dict[Path, str] = {}  # every output's problem, said together
    for path, whole in zip(given, wholes):
        # (an output that is a folder already is refused as one, below)
        inside = next((other for other in wholes
                       if other in whole.parents and not other.is_dir()), None)
        why = ("is given for two outputs" if whole in seen
               else "is the scenario's own input" if whole in inputs
               else f"is inside {inside}, which is written as a file" if inside else None)
        seen.add(whole)
        if why is not None:
            problems[path] = f"cannot write {path}: {why}"
    for path in given:
        if path in problems:
            continue
        missing = [f for f in (path.parent, *path.parent.parents) if not f.exists()]
        why = _writable(path)
        MADE_FOLDERS.extend(reversed(missing))
        if why is not None:  # (guard removes the folders made)
            problems[path] = f"cannot write {path}: {why}"
    refuse(list(problems.values()))


# what is written to an output whose name must end in .<key> to be opened as such
KINDS = {"xlsx": "an Excel workbook", "mps": "an MPS model", "csv": "CSV"}


def check_suffixes(**paths: Optional[Path]) -> None:
    """Bad input where an output's name does not end as what is written there (a
    workbook named plan.csv, MPS named model.lp: what opens it by its name fails)."""
    refuse([f"cannot write {path}: it is written as {KINDS[suffix]}; give a name ending "
             f"in .{suffix}" for suffix, path in paths.items()
             if path is not None and path.suffix.lower() != f".{suffix}"])


def _remove_made_folders() -> None:
    """Remove the folders made for a command's outputs, where still empty (the command
    ended on bad input: it writes nothing, folders included)."""
    for folder in reversed(MADE_FOLDERS):
        with contextlib.suppress(OSError):
            folder.rmdir()
    MADE_FOLDERS.clear()


def _scenario_files(scenario: Path) -> set[Path]:
    """The files a scenario is read from: the workbook, or the folder's table files."""
    from planner.io.schema import TABLES_BY_NAME

    if scenario.is_dir():
        return {(scenario / f"{name}.csv").resolve() for name in TABLES_BY_NAME}
    return {scenario.resolve()}


def report_seconds(scenario) -> float:
    """Seconds kept back from the solve for the plan's tables, its check, workbook and
    JSON: 1 s and `per_cell_s` (the plan's draft refines it: `writing_seconds`), at
    the machine's pace (planner.solve.work.pace). Measured (2026-11-26, tables written
    straight as XML, the fitted machine): the default scenario, 1.4 k cells, 0.6 s;
    200x40x24, 36 k cells, 5.6 s; 1000x100x36, 294 k cells, 32 s (workbook 19 s)."""
    from planner.solve.work import pace

    return pace() * (1.0 + per_cell_s(scenario))


def per_cell_s(scenario) -> float:
    """The fitted machine's seconds of writing by the scenario's demand cells: 0.12 ms
    per demand cell and segment."""
    from planner.model.candidates import make_segments

    return 0.00012 * len(scenario.demand) * len(make_segments(scenario))


def writing_seconds(rows: int) -> float:
    """Seconds a plan whose tables have about `rows` rows (planner.solve.decompose.
    construct.Draft.rows) takes from solved to written: its tables, check, workbook and
    JSON, at the machine's pace. Measured (2026-11-26, tables written straight as XML,
    the fitted machine): 4 k rows 0.6 s (the default scenario), 76 k 5.6 s (200x40x24:
    tables 0.5, check 0.8, workbook 3.5, JSON 0.8), 370 k 32 s (1000x100x36: 3.2, 5.1,
    19.4, 4.5); 0.09 ms a row and a margin."""
    from planner.solve.work import pace

    return pace() * (0.5 + 0.00009 * rows)


def pace_machine() -> None:
    """Reckon the work clock at this machine's pace (planner.solve.pace), measured on
    the first run and kept; a PLANNER_PACE that is not a pace is bad input."""
    from planner.solve.pace import machine_pace
    from planner.solve.work import set_pace

    try:
        set_pace(machine_pace())
    except ValueError as e:
        err.print(f"[red]error:[/] {escape(str(e))}")
        raise typer.Exit(EXIT_BAD_INPUT) from None


def warn_past_limit(budget, what: str) -> None:
    """Say so when the command ends past its time limit and the 10 % SPEC §4 allows:
    `what` it must do at the least took longer (the default scenario's stochastic plan
    of four samples at --time-limit 3: nine solves of half a second each whatever
    their limits, 5.4 s)."""
    if budget.elapsed() > 1.1 * budget.seconds:
        warn(f"the command took {budget.elapsed():.1f} s, past "
             f"--time-limit {budget.seconds:g} s: {what} take longer than that here")


def warn_clock_stopped(budget, result) -> None:
    """Say so when the wall clock, not the work clock, ended a plan short of its gap:
    the machine ran behind its reckoning (busy, or slower than its pace), so another
    run may stop at another round (5 runs of a generated 20x8x6 market at --time-limit
    10, each beside the comparison plans on a loaded machine: 5 round counts); its
    rounds replay it."""
    if not budget.stopped_short(result.status):
        return
    replay = f"; --rounds {result.rounds} replays this plan" if result.rounds else ""
    warn(f"the wall clock stopped the plan with {budget.work_left():.1f} s of its "
         "reckoned work left: this machine ran behind its pace (busy, or slower), so "
         f"another run may stop elsewhere{replay}")


def warn_solves_stopped(which: str, what: str) -> None:
    """Say that the wall clock, not the work clock, stopped `which` solves with reckoned
    work left (planner.solve.budget.Budget.stopped_with_work_left), so that another run
    may give other `what` (two what-if runs at --jobs 2 on a loaded machine gave two
    plans, and two stochastic runs two expected costs, with nothing said)."""
    warn(f"the wall clock stopped {which} with some of their reckoned work left: this "
         "machine ran behind its pace (busy, or slower), so another run may stop them "
         f"elsewhere, with other {what}")


def warn_short_budget(budget, keep: float) -> bool:
    """Say so when the time limit leaves nothing to plan with once the `keep` seconds
    the tables and workbooks take are set aside: the command still writes a whole plan
    (the first it finds), and runs past the limit by what that and the writing take
    (200x40x24 at --time-limit 10: 21 s)."""
    if budget.left() < keep:
        warn(f"--time-limit {budget.seconds:g} s leaves no time to "
             f"plan: writing the plan's tables and workbook alone takes about "
             f"{keep:.0f} s here; the first whole plan found is written, after the "
             f"limit")
        return True
    return False


def parse_numbers(text: str, option: str,
                  problems: list[str] | None = None) -> list[float] | None:
    """Numbers separated by commas; where they are not, the problem is added to
    `problems` (None returned), or said and exit 2 where none is given."""
    try:
        numbers = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        numbers = [math.nan]
    if all(math.isfinite(x) for x in numbers):  # nan, inf: not a demand level
        return numbers
    problem = f"{option} takes numbers separated by commas, not '{text}'"
    if problems is None:
        refuse([problem])
    problems.append(problem)
    return None


