"""One rule for the data folder, shared by the Makefile, the CLI and any kernel (issue: README command 3 failed
right after `make data` when the datasets lived where the Makefile found them on its own).

The end-to-end tests run `make data`, the CLI and a fresh interpreter (as a kernel started by hand would be) in a
throwaway clone holding the library, the Makefile and a one-file registry, so nothing is written into this checkout
and no dataset is downloaded.
"""

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from isolib import datasets
from isolib.cli import main
from isolib.errors import DataError

ROOT = Path(__file__).resolve().parent.parent
TOY_TEXT = b"one line of toy text\n"
needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


@pytest.fixture
def clone(tmp_path):
    """``tmp_path/repo``: the library, the Makefile and a registry of one dataset (``toy``), set up as after
    `make setup`; the data lives outside it."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "isolib", repo / "isolib", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "Makefile", repo)
    entry = {"path": "toy.txt", "sha256": hashlib.sha256(TOY_TEXT).hexdigest(), "bytes": len(TOY_TEXT),
             "url": "https://example.invalid/toy.txt"}  # never asked: the file is present
    (repo / "data").mkdir()
    (repo / "data" / "registry.yaml").write_text(yaml.safe_dump({"toy": {"files": [entry]}}))
    for name in ("pyproject.toml", "constraints.txt", "requirements-models.txt"):
        (repo / name).touch()
    (repo / ".venv").mkdir()
    (repo / ".venv" / ".installed").touch()  # newer than what it depends on: make sets nothing up
    return repo


def toy_data(folder: Path) -> Path:
    (folder / "toy").mkdir(parents=True)
    (folder / "toy" / "toy.txt").write_bytes(TOY_TEXT)
    return folder


def run(repo: Path, *command: str, cwd: Path | None = None, **variables: str) -> subprocess.CompletedProcess:
    """``command`` in ``cwd`` (the clone by default) with the clone's library and without ISOLIB_DATA_DIR."""
    env = {name: value for name, value in os.environ.items() if name not in ("ISOLIB_DATA_DIR", "MAKEFLAGS")}
    env.update(PYTHONPATH=str(repo), **variables)
    return subprocess.run(command, cwd=cwd or repo, env=env, capture_output=True, text=True, timeout=120,
                          check=False)


def make_data(repo: Path, *variables: str) -> subprocess.CompletedProcess:
    done = run(repo, "make", "data", f"PY={sys.executable}", *variables)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def the_cli_and_a_kernel_find(repo: Path, folder: Path) -> None:
    verified = run(repo, sys.executable, "-m", "isolib", "data", "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"1 of 1 files verified in {folder} " in verified.stdout
    # A kernel starts in notebooks/ and imports the installed library; it reads a dataset.
    (repo / "notebooks").mkdir(exist_ok=True)
    kernel = run(repo, sys.executable, "-c", "from isolib import datasets; print(datasets._lines('toy', 'toy.txt'))",
                 cwd=repo / "notebooks")
    assert kernel.returncode == 0, kernel.stderr
    assert kernel.stdout.strip() == "['one line of toy text']"


@needs_make
def test_the_cli_and_a_kernel_find_the_folder_make_data_verified_when_given_to_make(clone, tmp_path):
    folder = toy_data(tmp_path / "my data")
    make_data(clone, f"ISOLIB_DATA_DIR={folder}")
    the_cli_and_a_kernel_find(clone, folder)
    # ISOLIB_DATA_DIR still overrides what make data recorded.
    elsewhere = run(clone, sys.executable, "-m", "isolib", "data", "verify", ISOLIB_DATA_DIR=str(tmp_path / "other"))
    assert elsewhere.returncode == 1 and f"0 of 1 files verified in {tmp_path / 'other'} " in elsewhere.stdout


@needs_make
def test_the_cli_and_a_kernel_find_the_folder_make_data_found_beside_the_checkout(clone, tmp_path):
    folder = toy_data(tmp_path / "shared" / "data")
    (folder / "README.md").write_text("datasets\n")
    make_data(clone)
    the_cli_and_a_kernel_find(clone, folder)


@needs_make
def test_make_test_uses_the_recorded_folder_instead_of_fetching_into_data_raw(clone, tmp_path):
    fetch = f"{sys.executable} -m isolib data fetch all"
    planned = run(clone, "make", "-n", "test", f"PY={sys.executable}").stdout
    assert fetch in planned, "the control: with nothing recorded, make test fills data/raw first"
    make_data(clone, f"ISOLIB_DATA_DIR={toy_data(tmp_path / 'my data')}")
    planned = run(clone, "make", "-n", "test", f"PY={sys.executable}").stdout
    assert fetch not in planned and "-m pytest tests" in planned


# --------------------------------------------------------------------------- the rule and its errors, in-process


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """This process's rule pointed at a throwaway checkout: no ISOLIB_DATA_DIR, nothing recorded, nothing beside."""
    monkeypatch.delenv("ISOLIB_DATA_DIR", raising=False)
    monkeypatch.setattr(datasets, "DEFAULT_DATA_DIR", tmp_path / "repo" / "data" / "raw")
    monkeypatch.setattr(datasets, "SHARED_DATA_DIR", tmp_path / "shared" / "data")
    monkeypatch.setattr(datasets, "DATA_DIR_RECORD", tmp_path / "repo" / ".isolib-data-dir")
    return tmp_path


def test_the_variable_overrides_the_record_which_overrides_the_folder_beside_the_checkout(checkout, monkeypatch):
    assert datasets.data_dir() == checkout / "repo" / "data" / "raw"
    beside = checkout / "shared" / "data"
    beside.mkdir(parents=True)
    (beside / "README.md").write_text("datasets\n")
    assert datasets.data_dir() == beside
    recorded = checkout / "recorded"
    recorded.mkdir()
    monkeypatch.setenv("ISOLIB_DATA_DIR", str(recorded))
    assert datasets.record_data_dir() == recorded
    monkeypatch.delenv("ISOLIB_DATA_DIR")
    assert datasets.data_dir() == recorded
    monkeypatch.setenv("ISOLIB_DATA_DIR", str(checkout / "named"))
    assert datasets.data_dir() == checkout / "named"


def test_recording_the_default_folder_removes_an_older_record(checkout, monkeypatch):
    # As CI's `make data ISOLIB_DATA_DIR=<checkout>/data/raw`: data/raw is found without a record.
    datasets.DATA_DIR_RECORD.parent.mkdir()
    datasets.DATA_DIR_RECORD.write_text(f"{checkout}\n")
    monkeypatch.setenv("ISOLIB_DATA_DIR", str(datasets.DEFAULT_DATA_DIR))
    assert datasets.record_data_dir() is None
    assert not datasets.DATA_DIR_RECORD.exists()


def test_a_deleted_recorded_folder_is_named_with_the_file_that_recorded_it(checkout, capsys):
    record = datasets.DATA_DIR_RECORD
    record.parent.mkdir()
    record.write_text(f"{checkout / 'gone'}\n")
    assert main(["data", "verify"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (f"error: {record} (written by `make data`) names the data folder {checkout / 'gone'}, which no "
                    f"longer exists; run `make data ISOLIB_DATA_DIR=FOLDER` with the folder that holds the datasets, "
                    f"or delete {record} to use the default.")


@pytest.mark.parametrize("chosen_by", ["variable", "record", "default"])
def test_a_missing_file_is_reported_after_the_folder_and_what_chose_it(checkout, monkeypatch, chosen_by):
    folder = checkout / "repo" / "data" / "raw"
    folder.mkdir(parents=True)
    if chosen_by == "variable":
        monkeypatch.setenv("ISOLIB_DATA_DIR", str(folder))
        setting = "set by ISOLIB_DATA_DIR"
    elif chosen_by == "record":
        datasets.DATA_DIR_RECORD.write_text(f"{folder}\n")
        setting = f"recorded in {datasets.DATA_DIR_RECORD} by `make data`"
    else:
        setting = "the default: no ISOLIB_DATA_DIR, no .isolib-data-dir"
    with pytest.raises(DataError) as error:
        datasets.load_word_similarity("simlex999")
    assert str(error.value).startswith(f"In the data folder {folder} ({setting}), dataset 'word-benchmarks' file ")
    assert str(error.value).endswith(" is missing; record the folder that holds the datasets with `make data "
                                     "ISOLIB_DATA_DIR=FOLDER` (or set ISOLIB_DATA_DIR), or download them into this "
                                     "one with `python -m isolib data fetch word-benchmarks` (needs a network).")


def test_a_file_no_url_serves_is_not_offered_a_download(checkout, monkeypatch):
    entries = {file: {**entry, "url": None} for file, entry in datasets._file_entries("word-benchmarks").items()}
    monkeypatch.setattr(datasets, "_file_entries", lambda name: entries)
    with pytest.raises(DataError) as error:
        datasets.load_word_similarity("simlex999")
    assert "data fetch" not in str(error.value)
    assert str(error.value).endswith(" is missing; no public URL serves it, so record the folder that holds it "
                                     "with `make data ISOLIB_DATA_DIR=FOLDER` (or set ISOLIB_DATA_DIR).")
