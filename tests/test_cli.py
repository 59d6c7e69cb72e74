"""The command line: clear errors and exit codes."""

import json
import re
import shutil

import pandas as pd
import pytest

from isolib.cli import main


def test_verify_one_dataset(capsys):
    assert main(["data", "verify", "stsb"]) == 0
    assert "5 of 5 files verified" in capsys.readouterr().out


def test_fetching_and_verifying_every_dataset_prints_one_line_per_dataset_and_a_total(capsys):
    from isolib.datasets import DATASETS

    assert main(["data", "fetch", "all"]) == 0
    assert main(["data", "verify", "all"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines[:-1]] == list(DATASETS)
    assert re.fullmatch(r"(\d+) of \1 files verified in .+", lines[-1])


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


def test_overrides_are_yaml_values_and_make_a_variant_outside_figures():
    from isolib import parameters, project

    overrides = parameters.parse_overrides([["corpora", "[wikitext2]"], ["token_budget", "4096"], ["keep_symbols", "true"]])
    assert overrides == {"corpora": ["wikitext2"], "token_budget": 4096, "keep_symbols": True}
    params = parameters.parameters("02_cai_clusters_manifolds", "full", overrides)
    assert params["models"] == ["minilm", "mpnet", "smollm2"]  # the rest of the profile is kept
    assert params["corpora"] == ["wikitext2"] and params["token_budget"] == 4096
    assert params["profile"] == "full with corpora = ['wikitext2'], token_budget = 4096, keep_symbols = True"
    folder = project.variant_dir("02_cai_clusters_manifolds", "full", overrides)
    assert params["output_dir"] == str(folder / "figures")
    assert folder.is_relative_to(project.BUILD_DIR / "variants" / "full") and not folder.is_relative_to(project.FIGURES_DIR)
    assert re.fullmatch(r"corpora-wikitext2_keep_symbols-true_token_budget-4096-[0-9a-f]{12}", folder.name)
    long = project.variant_dir("02_cai_clusters_manifolds", "quick", {"layers": {"smollm2": list(range(31))}})
    assert len(long.name) <= 73


def test_bad_overrides_fail_with_one_sentence(capsys):
    assert main(["reproduce", "--profile", "quick", "--only", "00_quickstart", "-p", "n_sentencez", "5"]) == 2
    assert main(["reproduce", "--profile", "quick", "--only", "00_quickstart", "-p", "output_dir", "/tmp"]) == 2
    assert main(["reproduce", "--profile", "quick", "-p", "n_sentences", "5"]) == 2  # which notebook?
    assert main(["reproduce", "--profile", "quick", "--only", "00_quickstart", "-p", "models", "[minilm"]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 4 and all(line.startswith("error: ") for line in errors)
    assert "no parameter n_sentencez" in errors[0] and "no parameter output_dir" in errors[1]
    assert "--only" in errors[2] and "not valid YAML" in errors[3]


def test_a_variant_run_reaches_the_notebook_and_its_results(tmp_path, monkeypatch, capsys):
    from isolib import project

    monkeypatch.setattr(project, "BUILD_DIR", tmp_path)
    arguments = ["reproduce", "--profile", "quick", "--only", "04_mickus_isotropy_clusters", "-p", "setups",
                 "[supersenses]", "-p", "n_items", "300", "-p", "n_updates", "5", "-p", "seeds", "[0]",
                 "-p", "glue_tasks", "[]", "-p", "control_setups", "[]"]
    assert main(arguments) == 0, capsys.readouterr()
    folder = project.variant_dir("04_mickus_isotropy_clusters", "quick",
                                {"setups": ["supersenses"], "n_items": 300, "n_updates": 5, "seeds": [0],
                                 "glue_tasks": [], "control_setups": []})
    assert folder.is_relative_to(tmp_path)
    executed = (folder / "04_mickus_isotropy_clusters.ipynb").read_text()
    assert "n_items = 300" in executed  # papermill's injected-parameters cell records the override
    results = (folder / "figures" / "RESULTS.md").read_text()
    assert ("Profile `quick with setups = ['supersenses'], n_items = 300, n_updates = 5, seeds = [0], glue_tasks = [], "
            "control_setups = []`" in results)
    assert "(iv) GloVe-50d with WordNet noun supersenses" in results and "(i) polarity" not in results


def test_only_the_full_profile_writes_into_figures(tmp_path):
    from isolib import project

    project.check_output_dir("full", project.FIGURES_DIR / "02_cai_clusters_manifolds")
    project.check_output_dir("quick", tmp_path)
    for profile in ("quick", "full with corpora = ['wikitext2']"):
        with pytest.raises(ValueError, match="Only the full profile writes to"):
            project.check_output_dir(profile, project.FIGURES_DIR / "02_cai_clusters_manifolds")


def test_compare_outputs_reads_text_missing_in_both_runs_as_equal(tmp_path):
    from isolib.comparison import compare_outputs

    committed, fresh = tmp_path / "committed", tmp_path / "fresh"
    for folder in (committed, fresh):
        folder.mkdir()
        pd.DataFrame({"cluster": [0, 1], "why": [None, "the sink"]}).to_csv(folder / "clusters.csv", index=False)
    assert compare_outputs(committed, fresh) == []
    # The control: a text that did change is named.
    pd.DataFrame({"cluster": [0, 1], "why": [None, "placeholders"]}).to_csv(fresh / "clusters.csv", index=False)
    assert compare_outputs(committed, fresh) == ["clusters.csv: column why differs in 1 row(s), first row 1: "
                                                 "'the sink' committed, 'placeholders' now."]


def test_compare_outputs_passes_a_copy_and_names_each_altered_result(tmp_path):
    from isolib.comparison import compare_outputs
    from isolib.project import FIGURES_DIR

    source = FIGURES_DIR / "02_cai_clusters_manifolds"
    committed, fresh = tmp_path / "committed", tmp_path / "fresh"
    for folder in (committed, fresh):
        folder.mkdir()
        for path in [*source.glob("*.csv"), source / "results.json"]:
            shutil.copy(path, folder / path.name)
    assert compare_outputs(committed, fresh) == []
    table = sorted(fresh.glob("*.csv"))[0]
    frame = pd.read_csv(table)
    column = frame.select_dtypes("float").columns[0]
    frame.loc[0, column] = frame.loc[0, column] * (1 + 1e-6) + 1e-9  # within the tolerance
    frame.to_csv(table, index=False)
    assert compare_outputs(committed, fresh) == []
    frame.loc[0, column] = frame.loc[0, column] + 0.01
    frame.to_csv(table, index=False)
    differences = compare_outputs(committed, fresh)
    assert len(differences) == 1 and differences[0].startswith(f"{table.name}: column {column} differs in 1 row(s)")
    results = fresh / "results.json"
    results.write_text(results.read_text().replace('"status": "reproduced"', '"status": "not reproduced"', 1))
    assert "results.json: statuses differ" in compare_outputs(committed, fresh)[-1]
    (fresh / table.name).unlink()
    assert f"{table.name}: missing from the new run." in compare_outputs(committed, fresh)


def test_a_measured_time_declared_none_is_not_compared(tmp_path):
    from isolib.plotting import save_table
    from isolib.comparison import compare_outputs

    committed, fresh = tmp_path / "committed", tmp_path / "fresh"
    save_table(pd.DataFrame({"iw": [0.5], "seconds": [0.31]}), committed, "measures", tolerance={"seconds": None})
    save_table(pd.DataFrame({"iw": [0.5], "seconds": [0.46]}), fresh, "measures", tolerance={"seconds": None})
    assert compare_outputs(committed, fresh) == []
    # The control: the same time without the declaration is a difference.
    for folder in (committed, fresh):
        (folder / "tolerances.json").unlink()
    assert compare_outputs(committed, fresh)[0].startswith("measures.csv: column seconds differs")


def test_a_number_may_move_within_the_spread_its_table_declares_and_a_status_never(tmp_path):
    from isolib.findings import declare, sign, write_results
    from isolib.plotting import save_table
    from isolib.comparison import compare_outputs

    def run(folder, accuracy, gain):
        # One seed's accuracy (spread 0.02 over seeds) and a verdict on it.
        table = pd.DataFrame({"seed": [0, 1], "accuracy": accuracy, "accuracy_std": [0.02, 0.02], "n": [10, 10]})
        save_table(table, folder, "finetune", tolerance={"accuracy": "accuracy_std"})
        write_results([declare("It learns", "yes", "m", f"{gain}", sign(gain), "r.", kind="test", control="chance")],
                      folder / "RESULTS.md", title="t", citation="c", models="m")

    committed, fresh = tmp_path / "committed", tmp_path / "fresh"
    run(committed, [0.61, 0.64], 0.1)
    # Another CPU's kernels: one seed's accuracy moves by a point, within three standard deviations over seeds.
    run(fresh, [0.62, 0.64], 0.1)
    assert compare_outputs(committed, fresh) == []
    # Beyond three standard deviations: a difference.
    run(fresh, [0.69, 0.64], 0.1)
    assert compare_outputs(committed, fresh)[0].startswith("finetune.csv: column accuracy differs in 1 row(s)")
    # Within the spread, but the verdict changes: a difference.
    run(fresh, [0.62, 0.64], -0.1)
    assert compare_outputs(committed, fresh) == ["results.json: statuses differ (1 findings committed, 1 now; "
                                                 "test: It learns (m): reproduced -> not reproduced)."]


def test_a_restart_may_move_within_the_spread_of_its_own_group_not_of_the_whole_table(tmp_path):
    from isolib.plotting import replicates, save_table
    from isolib.comparison import compare_outputs

    def run(folder, scores):
        # k = 2: three restarts that spread (std 0.01); k = 3: three that agree (a far larger silhouette).
        table = pd.DataFrame({"k": [2, 2, 2, 3, 3, 3], "restart": [0, 1, 2] * 2, "silhouette": scores})
        save_table(table, folder, "silhouettes", tolerance={"silhouette": replicates("k")})

    committed, fresh = tmp_path / "committed", tmp_path / "fresh"
    run(committed, [0.10, 0.11, 0.12, 0.60, 0.60, 0.60])
    # Another CPU sends one k = 2 restart elsewhere by 0.02: within three of its group's standard deviations.
    run(fresh, [0.10, 0.13, 0.12, 0.60, 0.60, 0.60])
    assert compare_outputs(committed, fresh) == []
    # The control: the same move in k = 3, whose restarts agree (allowed: three of the median group's spread, 0.015),
    # is a difference; so is 0.04 in k = 2.
    run(fresh, [0.10, 0.11, 0.12, 0.60, 0.62, 0.60])
    assert compare_outputs(committed, fresh)[0].startswith("silhouettes.csv: column silhouette differs in 1 row(s), "
                                                           "first row 4")
    run(fresh, [0.14, 0.11, 0.12, 0.60, 0.60, 0.60])
    assert compare_outputs(committed, fresh)[0].startswith("silhouettes.csv: column silhouette differs in 1 row(s)")


def test_check_figures_needs_a_committed_folder(capsys):
    assert main(["check-figures", "99_nothing"]) == 2
    assert "Unknown notebook 99_nothing" in capsys.readouterr().err


@pytest.mark.parametrize(("option", "value", "range_"), [
    ("--rtol", "inf", "at least 0 and at most 1"), ("--rtol", "nan", "at least 0 and at most 1"),
    ("--rtol", "2", "at least 0 and at most 1"), ("--atol", "-1e-6", "at least 0"), ("--atol", "inf", "at least 0")])
def test_check_figures_refuses_a_tolerance_that_would_pass_or_fail_anything_before_any_rerun(option, value, range_,
                                                                                              monkeypatch, capsys):
    from isolib import runner

    def no_rerun(*args, **options):
        raise AssertionError("a rerun was started")

    monkeypatch.setattr(runner, "run_notebook", no_rerun)
    with pytest.raises(SystemExit) as refused:
        main(["check-figures", "00_quickstart", f"{option}={value}"])
    assert refused.value.code == 2
    what = "relative" if option == "--rtol" else "absolute"
    assert capsys.readouterr().err.splitlines()[-1].endswith(
        f"argument {option}: the {what} tolerance must be a finite number of {range_}; got '{value}'.")


def test_reproduce_runs_the_quick_profile_unless_told_and_its_help_says_what_each_profile_costs(capsys):
    from isolib.cli import build_parser

    assert build_parser().parse_args(["reproduce"]).profile == "quick"
    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "quick (default)" in help_text and "quick the default" in help_text
    for cost in ("a few minutes per notebook", "01 about 80 min", "02 about 30 min", "03 about 4 h", "04 about 3 h",
                 "05 about 15 min", "writes the committed figures/", "Hugging Face Hub", "network", "GPU"):
        assert cost in help_text


def test_make_figures_keeps_the_full_profile():
    from isolib.project import REPO_ROOT

    makefile = (REPO_ROOT / "Makefile").read_text()
    assert "reproduce --profile full --only $*" in makefile and "reproduce --profile quick --store" in makefile


@pytest.mark.parametrize(("one", "other"), [("-1", "1"), ("[wikitext2]", "wikitext2"), ("[minilm, mpnet]", "minilm mpnet"),
                                            ("1", "1.0"), ("true", "'true'"), ("[1, 2]", "[2, 1]")])
def test_different_variants_never_share_a_folder(one, other):
    from isolib import parameters, project

    folders = {project.variant_dir("00_quickstart", "quick", parameters.parse_overrides([["n_tokens", value]]))
               for value in (one, other)}
    assert len(folders) == 2


def test_the_same_variant_always_gets_the_same_folder():
    import hashlib

    from isolib import parameters, project

    given = [["corpora", "[ptb, wikitext2]"], ["token_budget", "4096"], ["layers", "{minilm: [0, 3], mpnet: [1]}"]]
    again = [["layers", "{mpnet: [1], minilm: [0, 3]}"], ["token_budget", "4_096"], ["corpora", "[ptb,wikitext2]"]]
    folder = project.variant_dir("02_cai_clusters_manifolds", "quick", parameters.parse_overrides(given))
    assert folder == project.variant_dir("02_cai_clusters_manifolds", "quick", parameters.parse_overrides(again))
    # A digest of the values, not Python's salted hash(): the folder is the same in every process.
    assert folder.name.endswith("-" + hashlib.sha256(
        b'{"corpora":["ptb","wikitext2"],"layers":{"minilm":[0,3],"mpnet":[1]},"token_budget":4096}').hexdigest()[:12])


def _tolerance_set(column, spec):
    """A damage: the committed tolerance of silhouettes' ``column`` replaced by ``spec``."""
    def damage(folder):
        path = folder / "tolerances.json"
        declared = json.loads(path.read_text())
        declared["silhouettes"][column] = spec
        path.write_text(json.dumps(declared))
        return path, [column]
    return damage


def _replaced(name, text):
    """A damage: the committed file ``name`` replaced by ``text`` (None: deleted)."""
    def damage(folder):
        path = folder / name
        path.unlink() if text is None else path.write_text(text if isinstance(text, str) else text(path.read_text()))
        return path, []
    return damage


COMMITTED_DAMAGES = {
    "record deleted": _replaced("results.json", None),
    "record empty": _replaced("results.json", ""),
    "record truncated": _replaced("results.json", lambda text: text[:100]),
    "tolerances truncated": _replaced("tolerances.json", lambda text: text[:17]),
    "tolerance of an unknown kind": _tolerance_set("inertia", {"within": 0.1}),
    "tolerance naming a missing column": _tolerance_set("inertia", {"replicates": ["model", "k", "seed"]}),
    "tolerance of a missing column": _tolerance_set("distortion", 0.1),
    "negative tolerance": _tolerance_set("inertia", -0.5),
    "NaN tolerance": _tolerance_set("inertia", float("nan")),
    "empty table": _replaced("silhouettes.csv", ""),
    "junk table": _replaced("clusters.csv", "model,layer\nminilm,0\nmpnet,0,3,4\n"),
}


@pytest.mark.parametrize("damage", COMMITTED_DAMAGES.values(), ids=COMMITTED_DAMAGES.keys())
def test_check_figures_refuses_a_damaged_committed_input_in_one_sentence_before_any_rerun(
        damage, committed_figures, monkeypatch, capsys):
    from isolib import runner

    def rerun(*args, **kwargs):
        raise AssertionError("the notebook was rerun before its committed inputs were checked")

    monkeypatch.setattr(runner, "run_notebook", rerun)
    damaged, entries = damage(committed_figures / "02_cai_clusters_manifolds")
    assert main(["check-figures", "02_cai_clusters_manifolds"]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("error: "), errors
    assert str(damaged) in errors[0] and all(entry in errors[0] for entry in entries), errors[0]


def test_check_figures_reruns_once_every_committed_input_reads(committed_figures, monkeypatch, capsys):
    # The control of the test above: the committed inputs as they are reach the rerun (here a failing one).
    from isolib import project, runner

    monkeypatch.setattr(runner, "run_notebook", lambda notebook, profile, folder: runner.RunResult(
        notebook, False, 0.0, folder / f"{notebook}.ipynb", "stopped by the test"))
    for notebook in project.notebook_names():
        assert main(["check-figures", notebook]) == 1
        assert "stopped by the test" in capsys.readouterr().err


def test_compare_outputs_names_a_record_missing_from_the_committed_folder(tmp_path):
    from isolib.findings import declare, sign, write_results
    from isolib.comparison import compare_outputs

    committed, fresh = tmp_path / "committed", tmp_path / "fresh"
    for folder in (committed, fresh):
        folder.mkdir()
        pd.DataFrame({"k": [2]}).to_csv(folder / "clusters.csv", index=False)
        write_results([declare("It learns", "yes", "m", "0.1", sign(0.1), "r.", kind="test", control="chance")],
                      folder / "RESULTS.md", title="t", citation="c", models="m")
    assert compare_outputs(committed, fresh) == []
    (committed / "results.json").unlink()
    assert compare_outputs(committed, fresh) == [f"results.json: missing from {committed}, written by the new run."]


def test_a_committed_value_cut_short_never_widens_its_own_tolerance(tmp_path):
    from isolib.comparison import compare_outputs
    from isolib.project import FIGURES_DIR

    source = FIGURES_DIR / "02_cai_clusters_manifolds"
    committed, fresh = tmp_path / "committed", tmp_path / "fresh"
    for folder in (committed, fresh):
        folder.mkdir()
        for name in ("silhouettes.csv", "tolerances.json"):
            shutil.copy(source / name, folder / name)
    assert compare_outputs(committed, fresh) == []
    # Seven bytes cut from the committed table: its last inertia, 3,720,406.5, reads 372, and its group of
    # restarts spreads by millions.
    table = committed / "silhouettes.csv"
    table.write_bytes(table.read_bytes()[:-7])
    for one, other in ((committed, fresh), (fresh, committed)):  # the same cut in the new run is one too
        differences = compare_outputs(one, other)
        assert len(differences) == 1 and differences[0].startswith(
            "silhouettes.csv: column inertia differs in 1 row(s), first row 5711: "), differences


def test_overview_refuses_a_study_whose_record_is_missing(committed_figures, capsys):
    page = committed_figures / "02_cai_clusters_manifolds" / "results.json"
    page.unlink()
    assert main(["overview"]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("error: ") and str(page) in errors[0], errors
    assert not (committed_figures / "README.md").exists()


def test_check_figures_compares_a_run_already_made_without_rerunning(committed_figures, tmp_path, monkeypatch, capsys):
    # The figures workflow regenerates a notebook in place, then compares that folder with the committed one.
    from isolib import runner

    def rerun(*args, **kwargs):
        raise AssertionError("a rerun was started")

    monkeypatch.setattr(runner, "run_notebook", rerun)
    notebook = "02_cai_clusters_manifolds"
    regenerated = tmp_path / "regenerated" / notebook
    shutil.copytree(committed_figures / notebook, regenerated)
    assert main(["check-figures", notebook, "--outputs", str(regenerated)]) == 0
    assert "statuses equal" in capsys.readouterr().out
    # The control: a number moved far beyond any tolerance is named, as a rerun's would be.
    table = pd.read_csv(regenerated / "per_layer.csv")
    column = table.select_dtypes("number").columns[-1]
    table[column] = table[column] * 3 + 1
    table.to_csv(regenerated / "per_layer.csv", index=False)
    assert main(["check-figures", notebook, "--outputs", str(regenerated)]) == 1
    assert f"per_layer.csv: column {column} differs" in capsys.readouterr().err
    missing = tmp_path / "nowhere"
    assert main(["check-figures", notebook, "--outputs", str(missing)]) == 2
    (error,) = capsys.readouterr().err.strip().splitlines()
    assert str(missing) in error and "does not exist" in error
