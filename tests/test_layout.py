"""Meta tests of the layout: study modules beside notebooks, and the library independent of them."""

import ast
from pathlib import Path

import pytest

from isolib import project
from isolib.findings import overview_text, read_record

PACKAGE = project.REPO_ROOT / "isolib"
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


def study_name(path: Path) -> str:
    """The study a file under ``isolib/studies/`` belongs to: its package's name, or a module's stem."""
    parts = path.relative_to(STUDIES).parts
    return parts[0] if len(parts) > 1 else path.stem


LIBRARY_FILES = sorted(p for p in PACKAGE.rglob("*.py") if STUDIES not in p.parents)
STUDY_FILES = sorted(p for p in STUDIES.rglob("*.py") if p != STUDIES / "__init__.py")
STUDY_NAMES = sorted({study_name(p) for p in STUDY_FILES})
STUDY_PACKAGES = sorted(p.parent for p in STUDIES.glob("*/__init__.py"))


def test_there_is_a_library_and_a_study():
    assert len(LIBRARY_FILES) > 10 and STUDY_FILES


@pytest.mark.parametrize("path", LIBRARY_FILES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_library_never_imports_a_study(path):
    # isolib.studies itself is the registry that finds a study's part by its notebook's name (the command line's way in).
    studies = {name for name in imported_modules(path) if name.startswith("isolib.studies.")
               and name not in {"isolib.studies.part", "isolib.studies.is_study"}}
    assert not studies, f"{path.name} imports {studies}; the library must not depend on a study"


@pytest.mark.parametrize("path", STUDY_FILES, ids=lambda p: str(p.relative_to(STUDIES)))
def test_no_study_imports_another(path):
    others = {name for name in imported_modules(path)
              if name.startswith("isolib.studies.") and not name.startswith(f"isolib.studies.{study_name(path)}")}
    assert not others, f"{path.name} imports {others}; shared code belongs in the library"


@pytest.mark.parametrize("name", sorted(set(project.notebook_names()) - NOT_STUDIES))
def test_every_study_notebook_has_its_study_module(name):
    module = name.split("_", 1)[1]
    assert (STUDIES / f"{module}.py").exists() or (STUDIES / module / "__init__.py").exists(), (
        f"notebooks/{name}.py needs isolib/studies/{module}/")
    assert f"isolib.studies.{module}" in imported_modules(project.NOTEBOOK_DIR / f"{name}.py")


def test_every_study_module_has_its_notebook():
    notebooks = {name.split("_", 1)[1] for name in project.notebook_names()}
    assert set(STUDY_NAMES) <= notebooks


@pytest.mark.parametrize("package", STUDY_PACKAGES, ids=lambda p: p.name)
def test_a_study_computes_apart_from_what_it_claims_and_draws(package):
    study = f"isolib.studies.{package.name}"
    # compute keys the stored steps, so it reaches no prose; claims judge stored evidence, so they reach no model.
    kept_apart = {"compute": ("isolib.findings", "isolib.plotting", f"{study}.claims", f"{study}.figures"),
                  "claims": (f"{study}.compute", "isolib.models", "isolib.embed", "isolib.probe", "isolib.cache")}
    for part, forbidden in kept_apart.items():
        imported = {name for name in imported_modules(package / f"{part}.py") if name.startswith(forbidden)}
        assert not imported, f"{package.name}/{part}.py imports {sorted(imported)}"


def test_the_overview_is_generated_from_the_committed_results():
    committed = project.FIGURES_DIR / "README.md"
    assert committed.exists(), "run `python -m isolib overview` to write figures/README.md"
    text = committed.read_text()
    assert text == overview_text(project.FIGURES_DIR, project.study_notebooks()), (
        "figures/README.md is stale: run `python -m isolib overview`")
    for name in project.study_notebooks():
        record = read_record(project.FIGURES_DIR / name)
        assert f"| [{name}](#{name}) | " + " | ".join(map(str, record.counts)) in text


def test_the_studies_are_the_notebooks_with_a_study_package():
    assert set(project.study_notebooks()) == set(project.notebook_names()) - NOT_STUDIES


@pytest.mark.parametrize("name", sorted(set(project.notebook_names()) - NOT_STUDIES))
def test_every_committed_results_page_is_rendered_from_its_record(name):
    from isolib.findings import results_page

    record = read_record(project.FIGURES_DIR / name)  # raises for a missing or malformed record
    assert (project.FIGURES_DIR / name / "RESULTS.md").read_text() == results_page(record), (
        f"figures/{name}/RESULTS.md is not the page of its results.json")
    if "smollm2" in record.models:
        assert "SmolLM2-135M-Instruct" in record.models


def _calls(path: Path, names: set[str]):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            function = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if function in names:
                yield node


def _study_calls(study: str, names: set[str]):
    """(file name, call) of each call to one of ``names`` in the files of ``study``."""
    for path in STUDY_FILES:
        if study_name(path) == study:
            yield from ((path.name, call) for call in _calls(path, names))


@pytest.mark.parametrize("study", STUDY_NAMES)
def test_every_finding_a_study_declares_has_a_kind(study):
    calls = list(_study_calls(study, {"declare", "not_comparable"}))
    assert calls, f"{study} declares no finding"
    missing = [f"{file}:{call.lineno}" for file, call in calls
               if "kind" not in {keyword.arg for keyword in call.keywords}]
    assert not missing, f"{study}: findings declared without a kind (test or check) at {missing}"


@pytest.mark.parametrize("study", STUDY_NAMES)
def test_every_test_a_study_declares_names_its_control(study):
    declared = [(file, call) for file, call in _study_calls(study, {"declare"})
                if any(k.arg == "kind" and isinstance(k.value, ast.Constant) and k.value.value == "test"
                       for k in call.keywords)]
    missing = [f"{file}:{call.lineno}" for file, call in declared
               if "control" not in {keyword.arg for keyword in call.keywords}]
    assert not missing, f"{study}: tests declared without a control at {missing}"
