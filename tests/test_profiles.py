"""`planner throughput`: model profiles → the scenario's throughput table.

Bad profiles are bad input like a bad scenario (SPEC §3): exit 2, every problem at once
with its file and key (or row and column), no traceback, nothing written. What the
profiles cannot cover is said, and the table written always passes `planner validate`.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.io.validate import load_scenario

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def folders(tmp_path):
    """A copy of the shipped scenario and of the shipped profiles, to spoil."""
    shutil.copytree(ROOT / "data", tmp_path / "data")
    shutil.copytree(ROOT / "models", tmp_path / "models")
    return tmp_path / "data", tmp_path / "models"


def _run(scenario: Path, models: Path):
    return CliRunner().invoke(app, ["throughput", str(scenario), str(models)])


def _edit(file: Path, old: str, new: str) -> None:
    text = file.read_text()
    assert old in text, (file, old)
    file.write_text(text.replace(old, new, 1))


def _lines(output: str) -> str:
    return re.sub(r"\s+", " ", output)


def _rows(scenario: Path) -> list[str]:
    return (scenario / "throughput.csv").read_text().splitlines()


def test_the_shipped_profiles_give_the_shipped_table(folders):
    data, models = folders
    before = (data / "throughput.csv").read_bytes()
    (data / "throughput.csv").write_text("workload,gpu,units_per_gpu,gpus_per_replica\n")
    res = _run(data, models)
    assert res.exit_code == 0, res.output
    assert (data / "throughput.csv").read_bytes() == before
    assert "warning" not in res.output


# (what is wrong, how to spoil the profiles, what the message must say)
BAD_PROFILES = [
    ("TOML syntax", lambda m: _edit(m / "sdxl.toml", "[compute]", "parameters_b = = 3\n[compute]"),
     ["sdxl.toml", "not valid TOML", "line 6"]),
    ("no parameters_b", lambda m: _edit(m / "bge-large.toml", "parameters_b = 0.335\n", ""),
     ["bge-large.toml", "parameters_b is missing", "embeddings"]),
    ("no [serving]", lambda m: _edit(m / "llama-3.1-70b.toml", "[serving]", "[serving_old]"),
     ["llama-3.1-70b.toml", "[serving] is missing", "inference", "assistant-us"]),
    ("no .toml for a model",
     lambda m: _edit(m / "workloads.csv", "image-gen-eu,sdxl", "image-gen-eu,sdxl-2"),
     ["workloads.csv, row 12, column model", "sdxl-2.toml"]),
    ("unknown precision",
     lambda m: _edit(m / "workloads.csv", "assistant-us,llama-3.1-70b,fp8",
                     "assistant-us,llama-3.1-70b,fp4"),
     ["workloads.csv, row 5, column precision", "'fp4' is not one of"]),
    ("unknown mode", lambda m: _edit(m / "workloads.csv", "bf16,compute\nimage",
                                     "bf16,serving\nimage"),
     ["workloads.csv, row 11, column mode", "'serving' is not one of"]),
    ("a missing column",
     lambda m: (m / "workloads.csv").write_text(
         "\n".join(",".join(line.split(",")[:3])
                   for line in (m / "workloads.csv").read_text().splitlines()) + "\n"),
     ["workloads.csv, row 1, column mode", "required column is missing"]),
    ("text for a number",
     lambda m: _edit(m / "bge-large.toml", "parameters_b = 0.335", 'parameters_b = "0.335"'),
     ["bge-large.toml", "parameters_b", "'0.335' is text, not a number"]),
    ("zero FLOPs per unit",
     lambda m: _edit(m / "bge-large.toml", "flops_per_unit = 6.7e8", "flops_per_unit = 0"),
     ["bge-large.toml", "[compute] flops_per_unit = 0", "above 0"]),
    ("negative parameters",
     lambda m: _edit(m / "llama-3.1-70b.toml", "parameters_b = 70.6", "parameters_b = -70.6"),
     ["llama-3.1-70b.toml", "parameters_b = -70.6", "above 0"]),
    ("a measured entry without units_per_gpu",
     lambda m: (m / "llama-3.1-70b.toml").write_text(
         (m / "llama-3.1-70b.toml").read_text()
         + '\n[measured.inference.fp8.H100]\nunits = 750\ngpus_per_replica = 2\n'),
     ["llama-3.1-70b.toml", "[measured.inference.fp8.H100] units_per_gpu is missing"]),
    ("a utilization above 1",
     lambda m: _edit(m / "llama-3.1-70b.toml", "mfu = 0.40", "mfu = 40"),
     ["llama-3.1-70b.toml", "[training] mfu = 40", "at most 1"]),
    ("a workload listed twice",
     lambda m: _edit(m / "workloads.csv", "eval-runs,", "embeddings,"),
     ["workloads.csv, row 11, column workload", "twice", "row 10"]),
]


@pytest.mark.parametrize("spoil, says", [(s, m) for _, s, m in BAD_PROFILES],
                         ids=[name for name, _, _ in BAD_PROFILES])
def test_a_bad_profile_is_bad_input_named_by_file_and_key(folders, spoil, says):
    data, models = folders
    before = (data / "throughput.csv").read_bytes()
    spoil(models)
    res = _run(data, models)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and "unexpected error" not in res.output
    text = _lines(res.output)
    for part in says:
        assert part in text, (part, res.output)
    assert (data / "throughput.csv").read_bytes() == before


def test_every_profile_problem_at_once(folders):
    data, models = folders
    before = (data / "throughput.csv").read_bytes()
    _edit(models / "bge-large.toml", "parameters_b = 0.335\n", "")
    _edit(models / "sdxl.toml", "utilization = 0.35", "utilization = -1")
    _edit(models / "llama-3.1-70b.toml", "batch = 32", 'batch = "many"')
    _edit(models / "workloads.csv", "finetune-8b,llama-3.1-8b,bf16,training",
          "finetune-8b,llama-3.1-8b,bf17,training")
    (models / "llama-3.1-8b.toml").unlink()
    res = _run(data, models)
    assert res.exit_code == 2, res.output
    text = _lines(res.output)
    for part in ("bge-large.toml", "parameters_b is missing",
                 "sdxl.toml", "[compute] utilization = -1",
                 "llama-3.1-70b.toml", "[serving] batch", "'many'",
                 "workloads.csv, row 3, column precision", "'bf17'",
                 "workloads.csv, row 4, column model", "llama-3.1-8b.toml"):
        assert part in text, (part, res.output)
    assert (data / "throughput.csv").read_bytes() == before


def test_no_profiles_at_all_is_bad_input(folders):
    data, models = folders
    for toml in models.glob("*.toml"):
        toml.unlink()
    res = _run(data, models)
    assert res.exit_code == 2, res.output
    assert "workloads.csv, row 2, column model" in res.output
    assert "llama-3.1-70b.toml" in res.output and "Traceback" not in res.output


@pytest.mark.parametrize("rewrite", [
    lambda text: "\ufeff" + text,  # as Excel saves "CSV UTF-8"
    lambda text: text.replace(",", " , "),  # spaces around the names and values
    lambda text: text.replace("\n", "\r\n").replace("workload,model", "Workload,MODEL"),
], ids=["bom", "spaces", "crlf and case"])
def test_workloads_csv_as_spreadsheets_save_it(folders, rewrite):
    data, models = folders
    before = (data / "throughput.csv").read_bytes()
    file = models / "workloads.csv"
    file.write_bytes(rewrite(file.read_text()).encode())
    res = _run(data, models)
    assert res.exit_code == 0, res.output
    assert (data / "throughput.csv").read_bytes() == before


def test_a_workload_the_scenario_lacks_is_left_out_with_a_warning(folders):
    data, models = folders
    (models / "workloads.csv").write_text((models / "workloads.csv").read_text()
                                          + "ghost,sdxl,bf16,compute\n")
    res = _run(data, models)
    assert res.exit_code == 0, res.output
    assert "workloads.csv, row 13, column workload" in res.output
    assert "'ghost' is not a workload of the scenario" in _lines(res.output)
    assert not any(line.startswith("ghost,") for line in _rows(data))
    assert load_scenario(data).throughput  # the table written passes validate


def test_a_model_that_fits_no_gpu_is_warned_about(folders):
    data, models = folders
    (models / "giant.toml").write_text(
        'parameters_b = 1000\nlayers = 120\nkv_heads = 16\nhead_dim = 128\n'
        '[serving]\ncontext_tokens = 8192\nbatch = 32\nbandwidth_efficiency = 0.6\n'
        'compute_utilization = 0.5\nkv_precision = "bf16"\n')
    _edit(models / "workloads.csv", "assistant-apac,llama-3.1-70b,fp8",
          "assistant-apac,giant,bf16")
    res = _run(data, models)
    assert res.exit_code == 0, res.output
    text = _lines(res.output)
    assert "workloads.csv, row 9" in text
    assert "assistant-apac (giant, bf16, inference): no GPU type can serve it" in text
    assert "a replica needs 2,4" in text and "GB" in text
    assert not any(line.startswith("assistant-apac,") for line in _rows(data))


def test_a_gpu_without_the_figures_the_rules_need_is_warned_about(folders):
    data, models = folders
    row = len((data / "gpus.csv").read_text().splitlines()) + 1  # the row appended
    with (data / "gpus.csv").open("a") as f:
        f.write("GH200,96,4.0,,,no TFLOPS known yet\n")
    res = _run(data, models)
    assert res.exit_code == 0, res.output
    text = _lines(res.output)
    assert f"gpus.csv, row {row}, column bf16_tflops" in text
    assert "no throughput is derived on GH200" in text
    assert not any(",GH200," in line for line in _rows(data))


def test_rows_of_workloads_without_a_profile_are_kept(folders):
    data, models = folders
    with (data / "workloads.csv").open("a") as f:
        f.write("rerank,inference" + "," * 10 + "\n")
    with (data / "throughput.csv").open("a") as f:
        f.write("rerank,H100,500,1\nrerank,L4,80,\n")
    res = _run(data, models)
    assert res.exit_code == 0, res.output
    assert "rerank,H100,500,1" in _rows(data) and "rerank,L4,80," in _rows(data)
    assert "kept 2 row(s) of rerank" in _lines(res.output)
    assert any(t.workload == "rerank" for t in load_scenario(data).throughput)


def test_a_precision_the_profile_does_not_offer_is_warned_about(folders):
    data, models = folders
    _edit(models / "workloads.csv", "finetune-8b,llama-3.1-8b,bf16",
          "finetune-8b,llama-3.1-8b,int4")
    res = _run(data, models)
    assert res.exit_code == 0, res.output
    text = _lines(res.output)
    assert "workloads.csv, row 3, column precision" in text
    assert "int4 is not among the [precision] options of llama-3.1-8b.toml (bf16, fp8)" \
        in text


def test_a_workbook_scenario_is_refused_and_left_alone(folders, tmp_path):
    from planner.io.template import write_template

    data, models = folders
    book = tmp_path / "plan.xlsx"
    write_template(book)
    before = book.read_bytes()
    res = _run(book, models)
    assert res.exit_code == 2, res.output
    assert "NotADirectoryError" not in res.output
    assert "a folder of CSV files" in _lines(res.output)
    assert book.read_bytes() == before


def test_a_missing_scenario_folder_is_named_as_such(folders, tmp_path):
    _, models = folders
    res = _run(tmp_path / "nowhere", models)
    assert res.exit_code == 2, res.output
    assert "no such folder" in res.output
    assert not (tmp_path / "nowhere").exists()


def test_scenario_and_profile_problems_together_and_an_unreadable_table_kept(folders):
    # throughput.csv is rewritten: one it cannot read (its hand-entered rows) is not lost
    data, models = folders
    _edit(data / "gpus.csv", "H100,80,3.35", "H100,80,fast")
    bad_row = len((data / "throughput.csv").read_bytes().splitlines()) + 1
    (data / "throughput.csv").write_bytes((data / "throughput.csv").read_bytes()
                                          + b"rerank,H100,5\xfc0,1\n")
    before = (data / "throughput.csv").read_bytes()
    _edit(models / "sdxl.toml", "parameters_b = 3.5", "parameters_b = 0")
    res = _run(data, models)
    assert res.exit_code == 2, res.output
    text = _lines(res.output)
    assert text.count("'fast' is not a number") == 1  # read by validate and the rules
    for part in ("gpus.csv, row 2, column mem_bandwidth_tbps", "'fast' is not a number",
                 f"throughput.csv, row {bad_row}", "not UTF-8",
                 "sdxl.toml: parameters_b = 0: must be a number above 0"):
        assert part in text, (part, res.output)
    assert (data / "throughput.csv").read_bytes() == before


# Found by an outside audit (stop 61): each test fails on the code before its fix.

def test_a_misspelled_profile_key_is_warned_about_with_the_key_meant(folders):
    # kv_precison: ignored without a word, the KV cache then read at the weights'
    # precision (fp8 → bf16 for the 70B's; assistant-us on H100 698.562 → 566.448)
    data, models = folders
    _edit(models / "llama-3.1-70b.toml", 'kv_precision = "fp8"', 'kv_precison = "bf16"')
    _edit(models / "sdxl.toml", "[compute]", "bogus_key = 3\n[compute]")
    text = _said(data, models)
    assert ("llama-3.1-70b.toml: [serving] kv_precison: unknown key; ignored (did you "
            "mean kv_precision?)") in text
    assert "sdxl.toml: bogus_key: unknown key; ignored" in text
    # the shipped profiles hold no unknown key
    shutil.copytree(ROOT / "models", models, dirs_exist_ok=True)
    assert "unknown key" not in _said(data, models)


def _said(data: Path, models: Path, exit_code: int = 0) -> str:
    """What `planner throughput` says, its exit status checked."""
    res = _run(data, models)
    assert res.exit_code == exit_code, res.output
    return _lines(res.output)


def test_measured_figures_on_a_gpu_type_the_scenario_lacks_are_said(folders):
    # measured figures of finetune-8b on 'h100' (the scenario's is H100) and on Z999
    # had been dropped without a word, the roofline figure standing in
    data, models = folders
    with (models / "llama-3.1-8b.toml").open("a") as f:
        f.write("\n[measured.training.bf16.h100]\nunits_per_gpu = 7000\n"
                "[measured.training.bf16.Z999]\nunits_per_gpu = 9000\n")
    text = _said(data, models)
    assert ("[measured.training.bf16.h100]: no GPU type 'h100' in the scenario's gpus; "
            "not used (did you mean H100?)") in text
    assert "[measured.training.bf16.Z999]: no GPU type 'Z999'" in text


def test_a_pool_whose_workloads_get_replicas_of_other_sizes_is_bad_input(folders):
    # assistant-eu at bf16 in the pool of the fp8 assistants: 4 H100s a replica against
    # 2. The table had been written (exit 0) and `planner validate` then refused it
    data, models = folders
    before = (data / "throughput.csv").read_bytes()
    _edit(models / "workloads.csv", "assistant-eu,llama-3.1-70b,fp8",
          "assistant-eu,llama-3.1-70b,bf16")
    text = _said(data, models, exit_code=2)
    assert ("workloads.csv, row 7, column precision: pool 'llama-70b': assistant-eu gets "
            "replicas of other sizes than assistant-us on H100 (4 against 2)") in text
    assert (data / "throughput.csv").read_bytes() == before


def test_a_row_left_out_for_its_own_problem_has_its_profile_checked(folders):
    # a precision fp4 on the embeddings row hid bge-large's negative flops_per_unit; a
    # row listed twice hid that it names no profile
    data, models = folders
    _edit(models / "bge-large.toml", "flops_per_unit = 6.7e8", "flops_per_unit = -6.7e8")
    _edit(models / "workloads.csv", "embeddings,bge-large,bf16,compute",
          "embeddings,bge-large,fp4,compute")
    with (models / "workloads.csv").open("a") as f:
        f.write("image-gen-eu,sdxl-turbo,bf16,compute\n")
    text = _said(data, models, exit_code=2)
    for part in ("workloads.csv, row 11, column precision: 'fp4'",
                 "bge-large.toml: [compute] flops_per_unit = -6.7e+08: must be a number "
                 "above 0",
                 "workloads.csv, row 13, column workload: 'image-gen-eu' is listed twice",
                 "workloads.csv, row 13, column model: no profile"):
        assert part in text, (part, text)


def test_a_blank_memory_is_said_for_every_workload_it_leaves_out(folders):
    # a GPU type with no memory_gb: training and compute (min_memory_gb) get no rows on
    # it either, but the warning had named the six inference workloads alone
    data, models = folders
    with (data / "gpus.csv").open("a") as f:
        f.write("X2,,4.0,900,,\n")
    text = _said(data, models)
    assert ("column memory_gb: blank or 0: no throughput is derived on X2 for "
            "pretrain-70b, finetune-8b, hparam-sweeps and 8 more") in text
    assert not any(",X2," in line for line in _rows(data))


def test_the_gpu_types_a_workload_gets_no_row_on_are_said_with_why(folders):
    # an outside audit: the 70B at bf16 lost A10G and L4 without a word while other GPU
    # types served it (only a workload with no row at all was warned about)
    data, models = folders
    _edit(models / "workloads.csv", "assistant-eu,llama-3.1-70b,fp8",
          "assistant-eu,llama-3.1-70b,bf16")
    lines = (data / "workloads.csv").read_text().splitlines(keepends=True)
    (data / "workloads.csv").write_text("".join(  # its own replicas: no pool
        line.replace(",llama-70b,", ",,") if line.startswith("assistant-eu,") else line
        for line in lines))
    text = _said(data, models)
    assert "pretrain-70b: no row on L40S, A10G, L4: less than the 80 GB per GPU of " \
           "[training] min_memory_gb" in text
    assert re.search(r"assistant-eu: no row on [^:]*L4[^:]*: a replica needs \d+ GB", text)


def test_a_scenario_workloads_table_in_error_is_bad_input(folders):
    # an outside audit: workloads.csv with an unknown kind, allow_spot 'maybe' and a
    # workload named twice was read without a word, and throughput.csv written
    data, models = folders
    before = (data / "throughput.csv").read_bytes()
    _edit(data / "workloads.csv", "pretrain-70b,training,", "pretrain-70b,learning,")
    with (data / "workloads.csv").open("a") as f:
        f.write("finetune-8b,training,,,maybe,,1,0,0,,,\n")
    res = _run(data, models)
    assert res.exit_code == 2, res.output
    text = _lines(res.output)
    for part in ("workloads.csv, row 2, column kind: 'learning' is not one of",
                 "column allow_spot: 'maybe' is not true or false",
                 "duplicate workload 'finetune-8b' (first at row 3)"):
        assert part in text, (part, res.output)
    assert (data / "throughput.csv").read_bytes() == before
    # each said once: the tables throughput reads are checked as validate checks them
    (data / "gpus.csv").unlink()
    text = _lines(_run(data, models).output)
    assert text.count("gpus.csv: required table is missing") == 1, text
