"""The command line: clear errors and exit codes."""

import shutil

import pytest

from isolib.cli import main


def test_verify_one_dataset(capsys):
    assert main(["data", "verify", "stsb"]) == 0
    assert "5 of 5 files verified" in capsys.readouterr().out


def test_verify_reports_a_corrupt_file_and_how_to_fix_it(tmp_path, monkeypatch, capsys):
    from isolib.datasets import dataset_path

    copy = tmp_path / "stsb"
    shutil.copytree(dataset_path("stsb"), copy)
    with open(copy / "sts-dev.csv", "r+b") as handle:
        handle.write(b"X")
    monkeypatch.setenv("ISOLIB_DATA_DIR", str(tmp_path))
    assert main(["data", "verify", "stsb"]) == 1
    captured = capsys.readouterr()
    assert "corrupt" in captured.out and "python -m isolib data fetch stsb" in captured.err


def test_unknown_names_fail_with_one_sentence(capsys):
    assert main(["data", "verify", "imagenet"]) == 2
    assert main(["reproduce", "--profile", "quick", "--only", "99_nothing"]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 2 and all(line.startswith("error: ") for line in errors)


def test_store_is_only_for_the_quick_profile():
    from isolib.runner import run_notebook

    with pytest.raises(ValueError, match="Only the quick run"):
        run_notebook("00_quickstart", "full", store=True)
