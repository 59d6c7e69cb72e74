"""`python -m isolib judge` re-judges a study from its stored evidence alone: no model, no stored step.

How long it takes is measured by benchmarks/bench_judge.py, not here."""

import json
import shutil
import subprocess
import sys

import pytest

from isolib import project
from isolib.findings import read_record

# A child process in which loading a model or recomputing (or even reading) a stored step fails, and which
# reports whether torch was imported at all.
GUARDED_JUDGE = """
import sys
from isolib import models, steps

def refuse(*args, **kwargs):
    raise AssertionError("judging loaded a model or reached a stored step")

models.load_model = refuse
steps.memoized = refuse
from isolib.cli import main

code = main(["judge", sys.argv[1], "--folder", sys.argv[2]])
print("torch imported" if "torch" in sys.modules else "torch not imported")
sys.exit(code)
"""


@pytest.mark.parametrize("notebook", project.study_notebooks())
def test_judge_gives_the_stored_quick_runs_record_from_its_evidence_alone(notebook, tmp_path):
    stored = project.QUICK_RESULTS_DIR / notebook
    assert (stored / "evidence").is_dir(), (
        f"{stored} holds no evidence: store the quick run (python -m isolib reproduce --profile quick --store)")
    folder = tmp_path / notebook
    shutil.copytree(stored, folder)
    (folder / "results.json").unlink()
    result = subprocess.run([sys.executable, "-c", GUARDED_JUDGE, notebook, str(folder)], capture_output=True,
                            text=True, cwd=project.REPO_ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("torch not imported"), result.stdout
    assert read_record(folder) == read_record(stored), "judging the stored evidence gives the stored record"


def test_judge_refuses_a_folder_without_evidence_in_one_sentence(tmp_path, capsys):
    from isolib.cli import main

    assert main(["judge", project.study_notebooks()[0], "--folder", str(tmp_path)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "holds no stored evidence" in error and str(tmp_path) in error


def test_judge_refuses_a_notebook_that_is_no_study(capsys):
    from isolib.cli import main

    assert main(["judge", "00_quickstart"]) == 2
    assert "00_quickstart is not a study" in capsys.readouterr().err


def test_the_record_is_json_a_reader_can_open(tmp_path):
    notebook = project.study_notebooks()[0]
    document = json.loads((project.QUICK_RESULTS_DIR / notebook / "results.json").read_text())
    finding = document["findings"][0]
    assert {"finding", "paper", "model", "view", "ours", "value", "interval", "status", "kind", "control", "rule",
            "sampling_unit", "threshold_ours", "status_range"} <= set(finding)
