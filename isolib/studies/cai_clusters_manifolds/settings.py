"""Notebook 02's settings: the citation, the paper's models and Table 3, and the check of the parameters."""

from __future__ import annotations

from isolib.checks import check_choices, check_extraction, check_integers, check_layers, check_models
from isolib.findings import PaperModel

__all__ = ["CITATION", "TITLE", "PAPER_MODELS", "STAND_INS", "TABLE3", "TABLE3_STATIC", "check_parameters"]

CITATION = ("Xingyu Cai, Jiaji Huang, Yuchen Bian and Kenneth Church (2021), *Isotropy in the Contextual "
            "Embedding Space: Clusters and Manifolds*, ICLR 2021 (the authors' slides)")
TITLE = "Cai et al. (2021): results of this run"
PAPER_MODELS = (PaperModel("bert-base-uncased", "BERT", 13), PaperModel("distilbert-base-uncased", "D-BERT", 7),
                PaperModel("openai-gpt", "GPT", 13), PaperModel("gpt2", "GPT-2", 13), PaperModel("elmo", "ELMo", 3))
# The nearest offline model of the same kind: MiniLM (6 blocks, distilled from a BERT) for DistilBERT,
# MPNet (12 blocks) for BERT, the decoder SmolLM2 for GPT-2 (and GPT).
STAND_INS = {"minilm": "distilbert-base-uncased", "mpnet": "bert-base-uncased", "smollm2": "gpt2"}
# Table 3: average LID with the cosine (the authors' code: 1 - cos, i.e. a squared distance), points n.
TABLE3 = {"bert-base-uncased": (5.6, 1.19e6), "distilbert-base-uncased": (7.3, 1.19e6), "openai-gpt": (6.8, 0.96e6),
          "gpt2": (7.0, 1.09e6), "elmo": (9.1, 0.88e6)}
TABLE3_STATIC = {"GloVe (100-d)": (18.0, 1.18e6), "GloVe-2M (300-d)": (26.1, 2.20e6),
                 "word2vec GoogleNews (300-d)": (21.1, 3.00e6)}


def check_parameters(params: dict) -> None:
    """Refuse, in one sentence, parameters of notebook 02 its run would fail on (the runner calls it before any kernel).

    Parameters
    ----------
    params : dict
        Every parameter of the notebook: the defaults of its parameters cell completed by the run's.
    """
    check_models(params, "models")
    check_choices(params, "corpora", ("ptb", "wikitext2"))
    check_extraction(params)
    check_models(params, "static_baseline")
    check_layers(params, "layers")
    check_integers(params, ["token_budget", "kmeans_fit_size", "silhouette_sample", "lid_queries", "random_state"])
    check_integers(params, ["n_init", "max_instances", "lid_k", "lid_n_points", "n_plot_points"], minimum=1)
    if not 0 <= params["min_cluster_share"] < 1:
        raise ValueError(f"min_cluster_share is a share of the tokens, at least 0 and below 1; "
                         f"got {params['min_cluster_share']!r}.")
    check_integers(params, ["window_length"], minimum=3)  # room for a token between the special ones
    check_integers(params, ["k_max"], minimum=2)
    # The LID estimate needs more points than neighbours: at every point of its curve and in every window draw.
    fewest_points = min([*params["lid_n_points"], *([params["token_budget"]] if params["token_budget"] else [])])
    if params["lid_k"] >= fewest_points:
        raise ValueError(f"lid_k ({params['lid_k']}) must be below the fewest points it is estimated on "
                         f"({fewest_points}, from lid_n_points and token_budget).")
    if not 0 < params["stability_share"] <= 1:
        raise ValueError(f"stability_share is a share of the windows, above 0 and at most 1; "
                         f"got {params['stability_share']!r}.")
