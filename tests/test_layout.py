"""Meta tests of the layout: each study a small package beside its notebook, the library independent of the
studies, computation apart from claims, no import circle (imports by string included), and the sizes aimed at."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from isolib import computation, project
from isolib.findings import RULES, overview_text, read_record

PACKAGE = project.REPO_ROOT / "isolib"
STUDIES = PACKAGE / "studies"
# Notebooks that are not a study of a paper, so have no study package: the quickstart, and the card of any model
# (isolib.card), which judges statements about a model rather than a paper's claims.
NOT_STUDIES = {"00_quickstart", "06_model_card"}
# What every study package holds; figures are optional (a study may draw everything in its notebook).
PARTS = ("__init__", "settings", "compute", "claims")
# The only places that import a module named at run time: the registry of studies (a notebook's name to its
# part) and the decoder of stored steps (a stored dataclass names its class in isolib).
IMPORTS_BY_STRING = {"isolib.studies", "isolib.steps"}
# Functions longer than LONGEST_FUNCTION lines of code (docstring aside), each a documented numeric kernel or a
# one-pass loop whose steps share state: why each stays whole.
LONG_FUNCTIONS = {
    "isolib.embed.embed": "the one entry point of extraction: options checked, key made, the entry read or built",
}
LONGEST_FUNCTION = 60
LONGEST_STUDY_FILE = 650  # the aim is about 600
# What marks a study module as computing (not data such as a protocol's settings): it reaches one of these.
COMPUTING = ("isolib.steps", "isolib.embed", "isolib.probe", "isolib.metrics", "isolib.transforms",
             "isolib.evaluation", "isolib.models", "torch", "sklearn")


def module_name(path: Path) -> str:
    parts = path.relative_to(project.REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports (absolute names, relative imports resolved), at any depth of the file."""
    return computation.imported_names(ast.parse(path.read_text()), module_name(path), path.name == "__init__.py")


LIBRARY_FILES = sorted(p for p in PACKAGE.rglob("*.py") if STUDIES not in p.parents)
STUDY_PACKAGES = sorted(p for p in STUDIES.iterdir() if (p / "__init__.py").is_file())
STUDY_FILES = sorted(p for package in STUDY_PACKAGES for p in package.rglob("*.py"))
MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def test_there_is_a_library_and_a_study():
    assert len(LIBRARY_FILES) > 10 and STUDY_FILES


def test_every_study_is_a_package():
    loose = sorted(p.name for p in STUDIES.glob("*.py") if p.name != "__init__.py")
    assert not loose, f"isolib/studies/ holds modules {loose}; a study is a package isolib/studies/<name>/"


@pytest.mark.parametrize("path", LIBRARY_FILES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_library_never_imports_a_study(path):
    # isolib.studies itself is the registry that finds a study's part by its notebook's name.
    studies = {name for name in imported_modules(path) if name.startswith("isolib.studies.")
               and name not in {"isolib.studies.part", "isolib.studies.is_study"}}
    assert not studies, f"{path.name} imports {studies}; the library must not depend on a study"


@pytest.mark.parametrize("path", STUDY_FILES, ids=lambda p: str(p.relative_to(STUDIES)))
def test_no_study_imports_another_nor_the_registry(path):
    own = f"isolib.studies.{path.relative_to(STUDIES).parts[0]}"
    others = {name for name in imported_modules(path) if name.startswith("isolib.studies")
              and name != own and not name.startswith(f"{own}.")}
    assert not others, f"{path.name} imports {others}; shared code belongs in the library"


@pytest.mark.parametrize("name", sorted(set(project.notebook_names()) - NOT_STUDIES))
def test_every_study_notebook_has_its_package_with_its_parts(name):
    package = STUDIES / name.split("_", 1)[1]
    missing = [part for part in PARTS if not (package / f"{part}.py").is_file()]
    assert not missing, f"notebooks/{name}.py needs {', '.join(f'{package.name}/{part}.py' for part in missing)}"
    imported = imported_modules(project.NOTEBOOK_DIR / f"{name}.py")
    assert f"isolib.studies.{package.name}.claims" in imported, f"notebooks/{name}.py does not judge with its claims"


def test_every_study_package_has_its_notebook():
    notebooks = {name.split("_", 1)[1] for name in project.notebook_names()}
    assert {package.name for package in STUDY_PACKAGES} <= notebooks


@pytest.mark.parametrize("name", sorted(set(project.notebook_names()) - NOT_STUDIES))
def test_a_notebook_imports_a_few_dozen_names(name):
    """The notebook up to its exercises, which import for the student the library functions they ask to use."""
    tree = ast.parse((project.NOTEBOOK_DIR / f"{name}.py").read_text().split("\n# ## Exercises\n")[0])
    names = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
             for alias in node.names}
    assert len(names) <= 40, f"notebooks/{name}.py imports {len(names)} names: {sorted(names)}"


def _roles(package: Path) -> dict[str, list[Path]]:
    """A study's modules by what they do: computing (they reach :data:`COMPUTING`), judging (they reach
    isolib.findings: the claims and what summarises evidence for them), drawing, and data (settings, protocols)."""
    roles = {"computing": [], "judging": [], "drawing": [], "data": []}
    for path in sorted(package.rglob("*.py")):
        imported = imported_modules(path)
        if path.name == "__init__.py":
            continue
        if path.stem == "figures":
            roles["drawing"].append(path)
        elif any(name.startswith(COMPUTING) for name in imported):
            roles["computing"].append(path)
        elif any(name.startswith("isolib.findings") for name in imported) and path.stem != "settings":
            roles["judging"].append(path)
        else:
            roles["data"].append(path)
    return roles


@pytest.mark.parametrize("package", STUDY_PACKAGES, ids=lambda p: p.name)
def test_a_study_computes_apart_from_what_it_claims_and_draws(package):
    roles = _roles(package)
    assert roles["computing"] and roles["judging"], f"{package.name} has no computing or no judging module"
    apart = {module_name(path) for path in roles["judging"] + roles["drawing"]}
    for path in roles["computing"]:
        reached = {name for name in imported_modules(path) if name.startswith(("isolib.findings", "isolib.plotting",
                                                                               "matplotlib", "seaborn", *apart))}
        assert not reached, f"{path.name} computes evidence but imports {reached}"
    computing = {module_name(path) for path in roles["computing"]}
    for path in roles["judging"]:
        reached = {name for name in imported_modules(path) if name.startswith((*COMPUTING[:3], "isolib.cache", "torch"))
                   or any(name == module or name.startswith(f"{module}.") for module in computing)}
        assert not reached, f"{path.name} judges evidence but imports {reached}"


@pytest.mark.parametrize("package", STUDY_PACKAGES, ids=lambda p: p.name)
def test_stored_steps_are_keyed_by_computation_alone(package):
    # Every module of the study that stores steps is keyed by what it reaches: never the claims, the figures,
    # the settings (a citation or a reference number), the findings or the plotting.
    own = f"isolib.studies.{package.name}"
    storing = [path for path in _roles(package)["computing"] if "memoized" in path.read_text()]
    for path in storing:
        keyed = set(computation.computation_modules([module_name(path)]))
        assert not {name for name in keyed if name.startswith((f"{own}.claims", f"{own}.figures", f"{own}.settings",
                                                                "isolib.findings", "isolib.plotting"))}, keyed


@pytest.mark.parametrize("package", STUDY_PACKAGES, ids=lambda p: p.name)
def test_a_parameter_check_loads_no_plotting_and_no_torch(package):
    code = (f"import sys, isolib.studies.{package.name}.settings\n"
            "print(sorted(m for m in ('matplotlib', 'seaborn', 'torch', 'transformers') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=project.REPO_ROOT,
                            check=True).stdout.strip()
    assert loaded == "[]", f"{package.name}.settings loads {loaded}"


def _import_graph() -> dict[str, set[str]]:
    """Which isolib module imports which (at any depth of the file), the registry's imports by string included."""
    graph = {}
    for name, path in MODULES.items():
        targets = set()
        for imported in imported_modules(path):
            while imported and imported not in MODULES:  # ``from isolib.metrics import lid_mle`` is isolib.metrics
                imported = imported.rpartition(".")[0]
            if imported and imported != name and imported != "isolib":
                targets.add(imported)
        graph[name] = targets
    graph["isolib.studies"] |= {module_name(path) for path in STUDY_FILES if path.stem in ("settings", "claims")}
    return graph


def test_no_module_imports_another_that_imports_it_back():
    graph, state, cycles = _import_graph(), {}, []

    def visit(name, trail):
        state[name] = "open"
        for target in sorted(graph[name]):
            if state.get(target) == "open":
                cycles.append(trail[trail.index(target):] + [target])
            elif target not in state:
                visit(target, trail + [target])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    # A package's __init__ importing its own modules, which import each other, is no circle through it.
    cycles = [cycle for cycle in cycles if not all(step.startswith(cycle[0] + ".") for step in cycle[1:-1])]
    assert not cycles, "import circles: " + "; ".join(" -> ".join(cycle) for cycle in cycles)


def test_modules_are_imported_by_string_only_where_a_name_is_data():
    found = set()
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if called in ("import_module", "__import__", "find_spec"):
                    found.add(name)
    assert found <= IMPORTS_BY_STRING, f"modules imported by string in {sorted(found - IMPORTS_BY_STRING)}"


@pytest.mark.parametrize("path", STUDY_FILES, ids=lambda p: str(p.relative_to(STUDIES)))
def test_a_study_file_stays_short(path):
    lines = len(path.read_text().splitlines())
    assert lines <= LONGEST_STUDY_FILE, f"{path.relative_to(STUDIES)} has {lines} lines; split it by concern"


def _code_lines(function: ast.FunctionDef) -> int:
    body = function.body[1:] if ast.get_docstring(function) else function.body
    return body[-1].end_lineno - body[0].lineno + 1 if body else 0


@pytest.mark.parametrize("path", STUDY_FILES, ids=lambda p: str(p.relative_to(STUDIES)))
def test_a_study_function_reads_in_one_screen(path):
    long = [f"{node.name} ({_code_lines(node)} lines)" for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.FunctionDef) and _code_lines(node) > LONGEST_FUNCTION
            and f"{module_name(path)}.{node.name}" not in LONG_FUNCTIONS]
    assert not long, f"{path.relative_to(STUDIES)}: {', '.join(long)}; split them, or document a numeric kernel"


def test_the_overview_is_generated_from_the_committed_results():
    committed = project.FIGURES_DIR / "README.md"
    assert committed.exists(), "run `python -m isolib overview` to write figures/README.md"
    text = committed.read_text()
    assert text == overview_text(project.FIGURES_DIR, project.study_notebooks()), (
        "figures/README.md is stale: run `python -m isolib overview`")
    for name in project.study_notebooks():
        record = read_record(project.FIGURES_DIR / name)
        for basis, counts in record.counts_by_basis.iterrows():
            if counts.sum():
                earlier = " (earlier rules)" if record.rules < RULES else ""
                assert f"| [{name}](#{name}){earlier} | {basis} | " + " | ".join(map(str, counts)) in text


def test_the_studies_are_the_notebooks_with_a_study_package():
    assert set(project.study_notebooks()) == set(project.notebook_names()) - NOT_STUDIES


@pytest.mark.parametrize("name", sorted(set(project.notebook_names()) - NOT_STUDIES))
def test_every_committed_results_page_is_rendered_from_its_record(name):
    from isolib.findings import results_page

    record = read_record(project.FIGURES_DIR / name)  # raises for a missing or malformed record
    assert (project.FIGURES_DIR / name / "RESULTS.md").read_text() == results_page(record, project.FIGURES_DIR / name), (
        f"figures/{name}/RESULTS.md is not the page of its results.json")
    if "smollm2" in record.models:
        assert "SmolLM2-135M-Instruct" in record.models


def _calls(path: Path, names: set[str]):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            function = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if function in names:
                yield node


@pytest.mark.parametrize("package", STUDY_PACKAGES, ids=lambda p: p.name)
def test_every_finding_a_study_declares_has_a_kind_and_every_test_its_control(package):
    calls = [(path.name, call) for path in package.rglob("*.py") for call in _calls(path, {"declare", "not_comparable"})]
    assert calls, f"{package.name} declares no finding"
    keywords = [(name, call, {k.arg: k.value for k in call.keywords}) for name, call in calls]
    no_kind = [f"{name}:{call.lineno}" for name, call, given in keywords if "kind" not in given]
    assert not no_kind, f"{package.name}: findings declared without a kind (test or check) at {no_kind}"
    no_control = [f"{name}:{call.lineno}" for name, call, given in keywords
                  if call.func and getattr(call.func, "id", getattr(call.func, "attr", "")) == "declare"
                  and isinstance(given.get("kind"), ast.Constant) and given["kind"].value == "test"
                  and "control" not in given]
    assert not no_control, f"{package.name}: tests declared without a control at {no_control}"
