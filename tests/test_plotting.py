"""Figures and tables are written deterministically, in both formats."""

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from isolib.plotting import plot_per_layer, save_figure, save_table, set_style, show_table, show_text

TABLE = pd.DataFrame({"model": ["a"] * 3 + ["b"] * 5, "layer": [0, 1, 2, 0, 1, 2, 3, 4],
                      "value": [0.1, 0.2, 0.3, 0.5, 0.4, 0.3, 0.2, 0.1]})


def _draw():
    set_style()
    fig, ax = plt.subplots()
    plot_per_layer(TABLE, "value", ax=ax)
    return fig, ax


def test_saving_twice_gives_identical_bytes(tmp_path):
    fig, _ = _draw()
    first = [p.read_bytes() for p in save_figure(fig, tmp_path / "one", "figure")]
    second = [p.read_bytes() for p in save_figure(_draw()[0], tmp_path / "two", "figure")]
    assert first == second
    assert b"CreationDate" not in first[1]
    plt.close("all")


def test_relative_depth_puts_models_of_different_depth_on_one_axis():
    _, ax = _draw()
    xs = sorted({x for line in ax.get_lines() for x in line.get_xdata()})
    assert xs[0] == 0 and xs[-1] == 1 and 0.25 in xs and 0.5 in xs
    plt.close("all")


def test_tables_in_csv_and_markdown(tmp_path):
    csv, markdown = save_table(TABLE, tmp_path, "table", digits=2)
    assert pd.read_csv(csv).equals(TABLE)
    assert "0.10 |" in markdown.read_text() and "0.100" not in markdown.read_text()


def test_a_table_declares_how_far_its_numbers_may_move(tmp_path):
    from isolib.plotting import table_tolerances

    table = pd.DataFrame({"seed": [0, 1], "accuracy": [0.61, 0.64], "accuracy_std": [0.02, 0.03]})
    save_table(table, tmp_path, "finetune", tolerance={"accuracy": "accuracy_std", "seed": 0})
    save_table(TABLE, tmp_path, "plain")
    assert table_tolerances(tmp_path) == {"finetune": {"accuracy": "accuracy_std", "seed": 0}}
    # Saved again without one, the table's declaration goes.
    save_table(table, tmp_path, "finetune")
    assert table_tolerances(tmp_path) == {}
    with pytest.raises(ValueError, match="names columns it does not have: spread"):
        save_table(table, tmp_path, "finetune", tolerance={"accuracy": "spread"})


def test_replicates_allow_three_standard_deviations_of_their_own_group_or_of_the_median_group():
    from isolib.plotting import allowed_movement, replicates

    # Restarts of three values of k: k = 2's spread (std 0.5), k = 3's less (0.1), k = 4's agree exactly.
    table = pd.DataFrame({"k": [2, 2, 3, 3, 4, 4], "score": [1.0, 1 + 0.5 * 2**0.5, 2.0, 2 + 0.1 * 2**0.5, 3.0, 3.0]})
    allowed = allowed_movement(table, "score", replicates("k"))
    # k = 2 keeps its own spread; k = 4 gets the median group's (k = 3's), not the widest (k = 2's).
    assert allowed == pytest.approx([1.5, 1.5, 0.3, 0.3, 0.3, 0.3])


def test_an_interval_allows_half_its_width_and_a_number_itself():
    from isolib.plotting import allowed_movement, interval

    table = pd.DataFrame({"median": [0.5, 0.2], "low": [0.4, float("nan")], "high": [0.8, 0.3]})
    assert allowed_movement(table, "median", interval("low", "high")) == pytest.approx([0.2, 0.0])
    assert allowed_movement(table, "median", 0.05) == pytest.approx([0.05, 0.05])


def test_markdown_cells_escape_pipes():
    from isolib.markdown import markdown_table

    text = markdown_table(pd.DataFrame({"rule": ["|x| < 0.05"], "value": [0.5]}))
    assert r"\|x\| < 0.05" in text
    assert all(line.count("|") - line.count(r"\|") == 3 for line in text.splitlines())


def test_markdown_rounds_floats_but_never_prints_small_values_as_zeros():
    from isolib.markdown import markdown_table

    table = pd.DataFrame({"lr": [2e-5, 1e-4], "accuracy": [0.56321, 0.0], "i_w": [0.85, 1e-20]})
    rows = [line.split("|")[1:-1] for line in markdown_table(table).splitlines()[2:]]
    assert [[cell.strip() for cell in row] for row in rows] == [["2e-05", "0.563", "0.850"],
                                                                  ["0.0001", "0.000", "0.000"]]


def test_shown_tables_keep_every_text_whole():
    text = "Less than 5% of a word's variance is explained by its first principal component, in every layer"
    shown = show_table(pd.DataFrame({"finding": [text], "value": [0.12345]}))
    assert text in shown.data and "0.123" in shown.data
    assert repr(shown) == shown.data  # the stored plain-text output is readable Markdown too


def test_shown_text_is_markdown_that_reads_as_written_and_whose_plain_text_is_the_text():
    text = ("This run: S_inter and S_intra *low* [95% CI 0.1 to 0.2] (paper: <0.05 | ~0), minilm\n"
            "    1. not a list, nor code")
    shown = show_text(text)
    assert repr(shown) == text  # the stored plain-text output, as print wrote it
    first, second = shown.data.split("\n\n")  # a paragraph per line: a browser wraps it between words
    assert first == (r"This run: S\_inter and S\_intra \*low\* \[95% CI 0.1 to 0.2\] (paper: \<0.05 \| \~0), minilm")
    assert second == r"1\. not a list, nor code"


def test_describe_layers_gives_first_middle_and_last_layer_per_model():
    from isolib.plotting import describe_layers

    table = pd.DataFrame({"model": ["a"] * 3 + ["b"] * 5, "layer": [0, 1, 2, 4, 3, 2, 1, 0],
                          "value": [0.1, 0.2, 0.3, 0.9, 0.8, 0.7, 0.6, 0.5]})
    assert describe_layers(table, "value") == "a 0.10 (L0), 0.20 (L1), 0.30 (L2); b 0.50 (L0), 0.70 (L2), 0.90 (L4)"


def test_per_layer_figure_is_saved(tmp_path):
    from isolib.plotting import per_layer_figure

    table = pd.DataFrame({"model": ["a"] * 3, "layer": [0, 1, 2], "value": [0.1, -0.2, 0.3]})
    fig = per_layer_figure(table, "value", ylabel="v", title="t", output_dir=tmp_path, name="fig")
    assert (tmp_path / "fig.png").exists() and (tmp_path / "fig.pdf").exists() and fig.axes[0].get_title() == "t"
    plt.close(fig)


def test_no_value_widens_its_own_tolerance_the_smaller_run_s_spread_is_allowed():
    from isolib.plotting import allowed_movement, interval, replicates

    committed = pd.DataFrame({"k": [2, 2, 2], "score": [0.1, 0.11, 0.12], "score_std": [0.01, 0.01, 0.01],
                              "low": [0.0, 0.0, 0.0], "high": [0.2, 0.2, 0.2]})
    # One value cut short (0.12 read as 12, its spread 1.2 read as 12, its interval as wide) in the new run:
    # each row may move by what the narrower of the two runs allows.
    fresh = committed.assign(score=[0.1, 0.11, 12.0], score_std=[0.01, 0.01, 12.0], high=[0.2, 0.2, 12.0])
    for one, other in ((committed, fresh), (fresh, committed)):
        assert allowed_movement(one, "score", replicates("k"), other) == pytest.approx([0.03] * 3)
        assert allowed_movement(one, "score", "score_std", other) == pytest.approx([0.03] * 3)
        assert allowed_movement(one, "score", interval("low", "high"), other) == pytest.approx([0.1] * 3)
    # The control: from one run alone the cut value widens its own tolerance.
    assert allowed_movement(fresh, "score", replicates("k"))[2] > 10
