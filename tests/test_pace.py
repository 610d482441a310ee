"""The machine's pace (planner.solve.pace): the work clock's reckonings in this machine's
seconds, measured once per machine and kept, so that every run on it gives the same plan
and uses its budget."""

from __future__ import annotations

import json
import time

import pytest

from planner.io.generate import generate
from planner.io.validate import load_scenario
from planner.model.builder import ModelBuilder
from planner.model.candidates import find_candidates
from planner.solve import pace as pace_module
from planner.solve import work
from planner.solve.budget import Budget, Work


@pytest.fixture
def at(request):
    """Set the work clock's pace for one test; the fitted machine's (1) after it."""
    def set_to(value: float) -> None:
        work.set_pace(value)
    yield set_to
    work.set_pace(1.0)


@pytest.fixture
def kept(tmp_path, monkeypatch):
    """No PLANNER_PACE, the pace kept under `tmp_path`, and a calibration that takes
    `times` (the fitted machine's seconds times a ratio), counting its runs."""
    monkeypatch.delenv(pace_module.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    runs = []

    def calibrate(ratio: float) -> None:
        def measure():
            runs.append(ratio)
            return tuple(ratio * s for s in pace_module.REFERENCE_S)
        monkeypatch.setattr(pace_module, "_measure", measure)

    calibrate.runs = runs
    calibrate.file = tmp_path / "cache" / "planner" / pace_module.FILE
    return calibrate


def test_the_pace_is_measured_once_and_kept(kept):
    kept(0.5)
    assert pace_module.machine_pace() == 0.5  # half the fitted machine's seconds
    assert kept.runs == [0.5]
    assert json.loads(kept.file.read_text())["pace"] == 0.5
    kept(0.8)  # the machine measured again would say otherwise: the kept pace stands
    assert pace_module.machine_pace() == 0.5
    assert kept.runs == [0.5]


def test_a_pace_is_rounded_to_a_sixteenth_of_an_octave_and_bounded(kept):
    kept(0.77)  # 2 ** (-6 / 16) = 0.7711
    assert pace_module.measured_pace() == pytest.approx(2 ** (-6 / 16))
    kept(100.0)
    assert pace_module.measured_pace() == pace_module.MOST_PACE
    kept(0.001)
    assert pace_module.measured_pace() == pace_module.LEAST_PACE


def test_a_pace_kept_for_another_machine_or_unreadable_is_measured_again(kept):
    kept(2.0)
    kept.file.parent.mkdir(parents=True)
    other = dict(pace_module._machine(), cpu="another CPU")
    kept.file.write_text(json.dumps({"pace": 0.5, "machine": other}))
    assert pace_module.machine_pace() == 2.0
    kept.file.write_text("{not json")
    kept(0.5)
    assert pace_module.machine_pace() == 0.5
    assert kept.runs == [2.0, 0.5]


def test_where_the_pace_cannot_be_kept_it_is_the_fitted_machines(kept, tmp_path,
                                                                 monkeypatch):
    # a pace measured on every run would differ from run to run, and so would the plans
    blocker = tmp_path / "a file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # the folder would be under a file
    kept(0.5)
    assert pace_module.machine_pace() == 1.0
    assert kept.runs == []


def test_planner_pace_sets_it_and_must_be_a_pace(monkeypatch):
    monkeypatch.setenv(pace_module.ENV, "0.6")
    assert pace_module.machine_pace() == 0.6
    for bad in ("0", "-1", "fast", "nan", "inf"):
        monkeypatch.setenv(pace_module.ENV, bad)
        with pytest.raises(ValueError, match="PLANNER_PACE"):
            pace_module.machine_pace()


def test_the_command_says_a_bad_planner_pace_is_bad_input(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from planner.cli import app

    monkeypatch.setenv(pace_module.ENV, "fast")
    result = CliRunner().invoke(app, ["solve", "data", "-o", str(tmp_path / "p.xlsx")])
    assert result.exit_code == 2
    assert "PLANNER_PACE" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "p.xlsx").exists()


def test_the_calibration_runs_and_gives_a_pace(monkeypatch):
    # the real workload (HiGHS, Python, numpy): some tenths of a second on any machine
    monkeypatch.delenv(pace_module.ENV, raising=False)
    times = pace_module._measure()
    assert len(times) == 3 and all(0 < t < 5 for t in times)
    assert pace_module.LEAST_PACE <= pace_module.measured_pace() <= pace_module.MOST_PACE


def test_reckonings_are_in_this_machines_seconds(at):
    # every reckoning scales with the pace, and what a budget holds is read back
    # through it: an LP given the seconds its iterations are reckoned at runs them all
    fitted = (work.pool_mip_s(100, 40), work.lp_s(5000, 10**6, 4 * 10**5, 5 * 10**4, False),
              work.pricing_s(10**6, 2000), work.load_s(load_scenario("data")))
    iterations = work.lp_iterations_within(work.lp_s(5000, 10**6, 4 * 10**5, 5 * 10**4,
                                                     False), 10**6, 4 * 10**5, 5 * 10**4,
                                           False)
    nodes = work.nodes_within(6.0)
    at(0.5)
    assert (work.pool_mip_s(100, 40), work.lp_s(5000, 10**6, 4 * 10**5, 5 * 10**4, False),
            work.pricing_s(10**6, 2000), work.load_s(load_scenario("data"))) == \
        pytest.approx(tuple(0.5 * f for f in fitted))
    assert work.lp_iterations_within(work.lp_s(5000, 10**6, 4 * 10**5, 5 * 10**4, False),
                                     10**6, 4 * 10**5, 5 * 10**4, False) == \
        pytest.approx(iterations, abs=1) == pytest.approx(5000, abs=1)
    assert work.nodes_within(6.0) == 2 * nodes


def test_a_faster_machine_runs_more_of_a_budget_and_the_same_every_time(tmp_path, at):
    # at pace 0.5 each step is reckoned at half the fitted machine's seconds: the same
    # budget holds more pool MIPs, and two runs at that pace stop at the same one
    from planner.solve.decompose.method import decompose

    generate(tmp_path / "g", 8, 5, 3, 2)
    s = load_scenario(tmp_path / "g")

    def run():
        builder = ModelBuilder(s, find_candidates(s))
        return decompose(builder, Budget(1.0, work=Work(), wall_end=time.perf_counter()
                                         + 600), gap=1e-6)

    fitted = run()
    assert fitted.termination != "gap reached" and fitted.rounds.improve > 0  # its budget
    at(0.5)
    faster, again = run(), run()
    assert str(faster.rounds) == str(again.rounds) and faster.objective == again.objective
    assert faster.rounds.improve > fitted.rounds.improve


def test_work_in_another_process_or_on_a_worker_is_at_the_commands_pace(at):
    # the comparison plans' process and a cluster's workers reckon as the command does
    # (a new process starts at pace 1)
    from planner.beside import Beside
    from planner.cluster import Runner

    at(0.5)
    with Beside(work.model_index_s, 0) as beside:
        assert beside.result(60) == pytest.approx(0.5 * 0.01)
    with Runner(jobs=2) as runner:
        assert runner.map(work.model_index_s, [0, 10**6]) == \
            pytest.approx([0.5 * 0.01, 0.5 * 0.35])
