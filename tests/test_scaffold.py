"""A sixth study is easy to add: the template makes a small working study that keeps the layout's rules."""

import shutil
import subprocess
import sys

import pytest

from isolib import computation, project
from isolib.scaffold import TEMPLATE_DIR, new_study


@pytest.fixture
def repository(tmp_path):
    """A copy of the library with the notebooks' names, where a new study can be written."""
    shutil.copytree(project.REPO_ROOT / "isolib", tmp_path / "isolib", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "notebooks").mkdir()
    for name in project.notebook_names():
        (tmp_path / "notebooks" / f"{name}.py").write_text("")
    (tmp_path / "tests").mkdir()
    return tmp_path


def test_a_new_study_is_numbered_after_the_last_notebook_and_judges_its_evidence(repository, monkeypatch):
    written = new_study("toy_study", "Toy (2025): a test", root=repository)
    number = f"{int(project.notebook_names()[-1][:2]) + 1:02d}"
    assert repository / "notebooks" / f"{number}_toy_study.py" in written
    assert {path.name for path in (repository / "isolib" / "studies" / "toy_study").iterdir()} >= {
        "__init__.py", "settings.py", "compute.py", "claims.py", "figures.py"}
    assert not any("<<" in path.read_text() for path in written), "every placeholder is filled"
    # Its own tests pass against the copy of the library it was written into.
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             str(repository / "tests" / "test_toy_study.py")], capture_output=True, text=True,
                            cwd=repository, env={"PYTHONPATH": str(repository), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stdout + result.stderr
    # Its stored steps are keyed by its computation alone.
    monkeypatch.setattr(computation, "PACKAGE_ROOT", repository / "isolib")
    keyed = set(computation.computation_modules(["isolib.studies.toy_study.compute"]))
    assert "isolib.metrics" in keyed and not any(name.endswith((".claims", ".settings", ".figures")) for name in keyed)


@pytest.mark.parametrize("name, problem", [("Toy", "lower-case Python identifier"), ("2fast", "identifier"),
                                           ("every_measure", "exists already")])
def test_a_bad_or_taken_name_is_refused_and_nothing_written(repository, name, problem):
    (repository / "isolib" / "studies" / "every_measure").mkdir(exist_ok=True)
    before = sorted(repository.rglob("*"))
    with pytest.raises(ValueError, match=problem):
        new_study(name, "t", root=repository)
    assert sorted(repository.rglob("*")) == before


def test_the_template_is_where_the_command_reads_it():
    assert (TEMPLATE_DIR / "study" / "claims.py").is_file() and (TEMPLATE_DIR / "notebook.py").is_file()
