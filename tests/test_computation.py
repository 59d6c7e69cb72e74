"""A stored step is keyed by what its code computes: prose never invalidates it, computation always does."""

import shutil
import textwrap

import pytest

from isolib import computation, steps


@pytest.fixture
def library(tmp_path, monkeypatch):
    """A copy of isolib in tmp_path, with a study package whose compute module imports the library."""
    root = tmp_path / "isolib"
    shutil.copytree(computation.PACKAGE_ROOT, root, ignore=shutil.ignore_patterns("__pycache__", "studies"))
    study = root / "studies" / "toy"
    study.mkdir(parents=True)
    (root / "studies" / "__init__.py").write_text('"""Studies."""\n')
    (study / "__init__.py").write_text('"""A toy study."""\n')
    (study / "compute.py").write_text(textwrap.dedent('''\
        """Evidence of the toy study."""
        from isolib.metrics import average_cosine  # the measure


        def evidence(points):
            """Average cosine of the points."""
            return {"cosine": average_cosine(points)}
        '''))
    (study / "claims.py").write_text(textwrap.dedent('''\
        """Claims of the toy study."""
        THRESHOLD = 0.5


        def judge(evidence):
            return "reproduced" if evidence["cosine"] > THRESHOLD else "not reproduced"
        '''))
    monkeypatch.setattr(computation, "PACKAGE_ROOT", root)
    return root


def _digest():
    return computation.computation_digest(["isolib.studies.toy.compute"])


def _edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_the_digest_covers_the_compute_module_and_the_library_it_imports(library):
    names = set(computation.computation_modules(["isolib.studies.toy.compute"]))
    assert {"isolib.studies.toy.compute", "isolib.metrics", "isolib.metrics.cosine"} <= names
    assert "isolib.studies.toy.claims" not in names and "isolib.cache" not in names


@pytest.mark.parametrize("path, old, new", [
    ("studies/toy/compute.py", '"""Average cosine of the points."""', '"""The mean cosine of every pair."""'),
    ("studies/toy/compute.py", "# the measure", "# what Ethayarajh calls anisotropy"),
    ("studies/toy/compute.py", "\n\ndef evidence", "\n\n\n# a new comment\ndef evidence"),
    ("metrics/cosine.py", '"""Cosine measures:', '"""Measures of cosine:'),
    ("studies/toy/claims.py", "THRESHOLD = 0.5", "THRESHOLD = 0.4"),
    ("studies/toy/claims.py", '"reproduced" if', '"holds" if'),
], ids=["docstring", "comment", "blank lines", "library docstring", "a claim's threshold", "a claim's rule"])
def test_prose_and_claims_never_change_the_digest(library, path, old, new):
    before = _digest()
    _edit(library / path, old, new)
    assert _digest() == before


@pytest.mark.parametrize("path, old, new", [
    ("studies/toy/compute.py", 'return {"cosine": average_cosine(points)}',
     'return {"cosine": average_cosine(points[1:])}'),
    ("studies/toy/compute.py", '{"cosine"', '{"mean_cosine"'),
    ("metrics/cosine.py", "def average_cosine(", "def _unused():\n    return 0\n\n\ndef average_cosine("),
], ids=["an expression", "a key", "the library code it calls"])
def test_computation_always_changes_the_digest(library, path, old, new):
    before = _digest()
    _edit(library / path, old, new)
    assert _digest() != before


def test_a_stored_step_survives_a_docstring_edit_and_not_a_code_edit(library, cache_dir):
    calls = []

    def step():
        return steps.memoized("toy", {"seed": 0}, lambda: calls.append(1) or {"n": len(calls)},
                              code=["isolib.studies.toy.compute"])

    assert step() == {"n": 1}
    _edit(library / "studies/toy/compute.py", '"""Average cosine of the points."""', '"""Reworded."""')
    _edit(library / "studies/toy/claims.py", "THRESHOLD = 0.5", "THRESHOLD = 0.9")
    assert step() == {"n": 1} and calls == [1], "prose and claims reuse the stored value"
    _edit(library / "studies/toy/compute.py", "average_cosine(points)", "average_cosine(points) + 0")
    assert step() == {"n": 2}, "a change to the computation computes again"
