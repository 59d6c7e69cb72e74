"""What notebook 05 studies and with which settings: the papers, the twelve measures, the changes, the parameters.

Shared by :mod:`~isolib.studies.every_measure.compute` (which measures and changes it runs) and
:mod:`~isolib.studies.every_measure.claims` (how it names and judges them); nothing here computes.
"""

from __future__ import annotations

from isolib.checks import check_choices, check_extraction, check_integers, check_layers, check_models
from isolib.measures import (
    CHANGES,
    LABELS,
    MEASURE_BY_NAME,
    MEASURE_NAMES,
    MEASURES,
    TOP_COORDINATES,
    Measure,
)

__all__ = ["CITATION", "TITLE", "REFERENCES", "Measure", "MEASURES", "MEASURE_NAMES", "MEASURE_BY_NAME", "LABELS",
           "CHANGES", "TOP_COORDINATES", "check_parameters"]

TITLE = "Every measure on one embedding space: results of this run"
CITATION = ("Ethayarajh (2019), Cai et al. (2021), Rajaee & Pilehvar (2021) and Mickus et al. (2024), whose measures "
            "are put on the same points; the claims judged are those of Rudman et al. (2022), *IsoScore: Measuring "
            "the Uniformity of Embedding Space Utilization*, Findings of ACL 2022, and Timkey & van Schijndel (2021), "
            "*All Bark and No Bite: Rogue Dimensions in Transformer Language Models Obscure Representational "
            "Quality*, EMNLP 2021")
REFERENCES = {
    "Ethayarajh 2019": "How Contextual are Contextualized Word Representations?, EMNLP 2019",
    "Cai et al. 2021": "Isotropy in the Contextual Embedding Space: Clusters and Manifolds, ICLR 2021",
    "Mu & Viswanath 2018": "All-but-the-Top: Simple and Effective Postprocessing for Word Representations, ICLR 2018",
    "Rajaee & Pilehvar 2021": "A Cluster-based Approach for Improving Isotropy in Contextual Embedding Space, ACL 2021",
    "Rudman et al. 2022": "IsoScore: Measuring the Uniformity of Embedding Space Utilization, Findings of ACL 2022",
    "Timkey & van Schijndel 2021": "All Bark and No Bite: Rogue Dimensions in Transformer Language Models Obscure "
                                   "Representational Quality, EMNLP 2021",
    "Mickus et al. 2024": "Isotropy, Clusters, and Classifiers, ACL 2024",
    "Roy & Vetterli 2007": "The effective rank: a measure of effective dimensionality, EUSIPCO 2007",
    "Levina & Bickel 2005": "Maximum Likelihood Estimation of Intrinsic Dimension, NeurIPS 2004",
}


def check_parameters(params: dict) -> None:
    """Refuse, in one sentence, parameters of notebook 05 its run would fail on (the runner calls it before any kernel).

    Parameters
    ----------
    params : dict
        Every parameter of the notebook: the defaults of its parameters cell completed by the run's.
    """
    check_models(params, "models")
    check_choices(params, "corpus", ("ptb", "wikitext2"))
    check_extraction(params)
    if params["static_baseline"]:
        check_choices(params, "static_baseline", ("glove-50d",))
    check_layers(params, "layers")
    check_integers(params, ["token_budget", "random_state", "kmeans_fit_size", "silhouette_sample", "lid_queries"])
    check_integers(params, ["n_replicates", "n_resamples", "abtt_components"], minimum=1)
    check_integers(params, ["window_length"], minimum=3)
    check_integers(params, ["k_max"], minimum=2)
    check_integers(params, ["baseline_samples", "lid_k", "small_n"], minimum=2)
    check_integers(params, ["cluster_encoder", "cluster_decoder", "rogue_dimensions"], minimum=1)
    for name in ("cluster_encoder", "cluster_decoder"):
        if len(params[name]) != 2:
            raise ValueError(f"{name} must hold two integers, k and the directions per cluster; got {params[name]!r}.")
    check_integers(params, ["n_points"], minimum=10)
    check_integers(params, ["n_jobs"], minimum=None)
    if params["n_jobs"] == 0:
        raise ValueError("n_jobs must be a number of worker processes (1 runs in the kernel, -1 one per core); got 0.")
    if params["lid_k"] >= min(params["n_points"], params["small_n"]) - 1:
        raise ValueError(f"lid_k ({params['lid_k']}) must be below n_points and small_n, the fewest points the LID "
                         f"is estimated on ({min(params['n_points'], params['small_n'])}).")
    if params["small_n"] >= params["n_points"]:
        raise ValueError(f"small_n ({params['small_n']}) must be below n_points ({params['n_points']}): it is the "
                         "smaller sample of the sample-size change.")
    for name in ("scale", "outlier_scale"):
        if params[name] <= 0:
            raise ValueError(f"{name} must be above 0; got {params[name]!r}.")
    if not 0 < params["anisotropic_cosine"] < 1:
        raise ValueError(f"anisotropic_cosine is an average cosine above 0 and below 1; got {params['anisotropic_cosine']!r}.")
