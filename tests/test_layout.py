"""Meta tests of the layout: study modules beside notebooks, and the library independent of them."""

import ast
from pathlib import Path

import pytest

from isolib import runner
from isolib.findings import overview_text, read_record

PACKAGE = runner.REPO_ROOT / "isolib"
STUDIES = PACKAGE / "studies"
# Notebooks that are not a study of a paper, so have no study module.
NOT_STUDIES = {"00_quickstart"}


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports (absolute names), at any depth of the file."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


LIBRARY_FILES = sorted(p for p in PACKAGE.rglob("*.py") if STUDIES not in p.parents)
STUDY_FILES = sorted(p for p in STUDIES.rglob("*.py") if p != STUDIES / "__init__.py")
# Where a study declares its findings: its module, or its package's claims.
CLAIM_FILES = [p for p in STUDY_FILES if p.parent == STUDIES or p.name == "claims.py"]


def study_name(path: Path) -> str:
    """The study a file of isolib/studies/ belongs to: its module's or its package's name."""
    return path.relative_to(STUDIES).parts[0].removesuffix(".py")


def study_id(path: Path) -> str:
    return str(path.relative_to(STUDIES).with_suffix(""))


def test_there_is_a_library_and_a_study():
    assert len(LIBRARY_FILES) > 10 and STUDY_FILES


@pytest.mark.parametrize("path", LIBRARY_FILES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_library_never_imports_a_study(path):
    # isolib.studies itself is the registry that finds a study's part by its notebook's name (the command line's way in).
    studies = {name for name in imported_modules(path) if name.startswith("isolib.studies.")
               and name not in {"isolib.studies.part", "isolib.studies.is_study"}}
    assert not studies, f"{path.name} imports {studies}; the library must not depend on a study"


@pytest.mark.parametrize("path", STUDY_FILES, ids=study_id)
def test_no_study_imports_another(path):
    others = {name for name in imported_modules(path)
              if name.startswith("isolib.studies.") and not name.startswith(f"isolib.studies.{study_name(path)}")}
    assert not others, f"{path.name} imports {others}; shared code belongs in the library"


@pytest.mark.parametrize("name", sorted(set(runner.notebook_names()) - NOT_STUDIES))
def test_every_study_notebook_has_its_study_module(name):
    module = name.split("_", 1)[1]
    assert (STUDIES / f"{module}.py").exists() or (STUDIES / module / "__init__.py").exists(), (
        f"notebooks/{name}.py needs isolib/studies/{module}/")
    assert f"isolib.studies.{module}" in imported_modules(runner.NOTEBOOK_DIR / f"{name}.py")


def test_every_study_module_has_its_notebook():
    notebooks = {name.split("_", 1)[1] for name in runner.notebook_names()}
    assert {study_name(path) for path in STUDY_FILES} <= notebooks


def test_the_overview_is_generated_from_the_committed_results():
    committed = runner.FIGURES_DIR / "README.md"
    assert committed.exists(), "run `python -m isolib overview` to write figures/README.md"
    text = committed.read_text()
    assert text == overview_text(runner.FIGURES_DIR, runner.study_notebooks()), (
        "figures/README.md is stale: run `python -m isolib overview`")
    for name in runner.study_notebooks():
        record = read_record(runner.FIGURES_DIR / name)
        assert f"| [{name}](#{name}) | " + " | ".join(map(str, record.counts)) in text


def test_the_studies_are_the_notebooks_with_a_study_package():
    assert set(runner.study_notebooks()) == set(runner.notebook_names()) - NOT_STUDIES


@pytest.mark.parametrize("name", sorted(set(runner.notebook_names()) - NOT_STUDIES))
def test_every_committed_results_page_is_rendered_from_its_record(name):
    from isolib.findings import results_page

    record = read_record(runner.FIGURES_DIR / name)  # raises for a missing or malformed record
    assert (runner.FIGURES_DIR / name / "RESULTS.md").read_text() == results_page(record), (
        f"figures/{name}/RESULTS.md is not the page of its results.json")
    if "smollm2" in record.models:
        assert "SmolLM2-135M-Instruct" in record.models


def _calls(path: Path, names: set[str]):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            function = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if function in names:
                yield node


@pytest.mark.parametrize("path", CLAIM_FILES, ids=study_id)
def test_every_finding_a_study_declares_has_a_kind(path):
    calls = list(_calls(path, {"declare", "not_comparable"}))
    assert calls, f"{path.name} declares no finding"
    missing = [call.lineno for call in calls if "kind" not in {keyword.arg for keyword in call.keywords}]
    assert not missing, f"{path.name}: findings declared without a kind (test or check) on lines {missing}"


@pytest.mark.parametrize("path", CLAIM_FILES, ids=study_id)
def test_every_test_a_study_declares_names_its_control(path):
    declared = [call for call in _calls(path, {"declare"})
                if any(k.arg == "kind" and isinstance(k.value, ast.Constant) and k.value.value == "test"
                       for k in call.keywords)]
    missing = [call.lineno for call in declared if "control" not in {keyword.arg for keyword in call.keywords}]
    assert not missing, f"{path.name}: tests declared without a control on lines {missing}"
