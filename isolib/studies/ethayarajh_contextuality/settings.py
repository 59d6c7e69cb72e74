"""What notebook 01 compares with and runs on: the paper, its reference numbers, the parameters and their check.

Nothing here computes or judges: :mod:`~isolib.studies.ethayarajh_contextuality.claims` reads the paper's
models, reference numbers and stand-ins from here, and the runner calls :func:`check_parameters` before
any kernel starts.
"""

from __future__ import annotations

from collections.abc import Sequence

from isolib.checks import check_choices, check_extraction, check_integers, check_layers, check_models
from isolib.findings import PaperModel, models_line, paper_counterpart

__all__ = ["CITATION", "PAPER_MODELS", "PAPER_REFERENCE", "STAND_INS", "counterpart", "models_run",
           "check_parameters"]

CITATION = ("Kawin Ethayarajh (2019), *How Contextual are Contextualized Word Representations? Comparing the "
            "Geometry of BERT, ELMo, and GPT-2 Embeddings*, EMNLP-IJCNLP 2019, pp. 55-65; and the course slides "
            "*BERT Visualization* (Xueren Ge and Haibei Zhu)")
PAPER_MODELS = (PaperModel("bert-base-cased", "BERT", 13), PaperModel("gpt2", "GPT-2", 13),
                PaperModel("elmo", "ELMo", 3))
# The authors' committed statistics (REFERENCE.md, "01 - Ethayarajh"): measure -> layer -> value,
# or (low, high) for a value given as a range over several layers.
PAPER_REFERENCE: dict[str, dict[str, dict]] = {
    "bert-base-cased": {
        "baseline_cosine": {0: 0.105, 6: 0.42, 11: 0.675, 12: 0.477},
        "self_similarity": {0: 0.954, 8: 0.731, 11: 0.839, 12: 0.755},
        "intra_similarity": {12: 0.776},
    },
    "gpt2": {
        "baseline_cosine": {0: 0.61, (2, 9): (0.57, 0.62), 11: 0.758, 12: 0.978},
        "self_similarity": {0: 0.917, 8: 0.838, 12: 0.985},
        "intra_similarity": {12: 0.990},
    },
    "elmo": {
        "baseline_cosine": {0: 0.008, 1: 0.157, 2: 0.136},
        "intra_similarity": {2: 0.621},
    },
}
# The nearest offline model of the same kind (README, "Models"): encoders for BERT, the decoder for GPT-2.
STAND_INS = {"minilm": "bert-base-cased", "mpnet": "bert-base-cased", "smollm2": "gpt2"}


def counterpart(model: str) -> str | None:
    """The paper model ``model`` (or a view of it) is compared with: itself, its stand-in, or None."""
    return paper_counterpart(model, PAPER_REFERENCE, STAND_INS)


def models_run(models: Sequence[str], static_name: str) -> str:
    """The ``Models`` line of ``RESULTS.md``: each model and the paper model it stands in for."""
    return models_line(models, PAPER_MODELS, counterpart) + f"; static baseline {static_name}; ELMo is not run."


def check_parameters(params: dict) -> None:
    """Refuse, in one sentence, parameters of notebook 01 its run would fail on (the runner calls it before any kernel).

    Parameters
    ----------
    params : dict
        Every parameter of the notebook: the defaults of its parameters cell completed by the run's.
    """
    check_models(params, "models")
    check_choices(params, "corpus", ("sts", "snli"))
    # The units of occurrences.UNITS, spelled out: importing the computation would slow every check by seconds.
    check_choices(params, "unit", ("token", "word"))
    check_extraction(params)
    check_models(params, "static_baseline")
    check_layers(params, "layers")
    check_integers(params, ["n_sentences", "max_occurrences", "static_analogy_vocab", "random_state"])
    check_integers(params, ["min_contexts", "n_lowest", "n_word_pairs"], minimum=1)
    check_integers(params, ["n_samples"], minimum=2)  # each baseline compares two occurrences at least
    check_integers(params, ["table1_layers"], minimum=None)
    if not 0 <= params["min_coverage"] <= 1:
        raise ValueError(f"min_coverage is a share of benchmark items, between 0 and 1; got {params['min_coverage']!r}.")
