"""Settings of notebook 04 (Mickus et al. 2024): the citation, the paper's counts, names, and the parameter check.

Nothing here computes or judges: :mod:`.compute` builds the setups these names and counts describe, and
:mod:`.claims` sets the paper's counts beside ours.
"""

from __future__ import annotations

from isolib.checks import check_choices, check_integers, check_models

__all__ = [
    "CITATION",
    "TITLE",
    "SETUP_NAMES",
    "SETUPS",
    "PAPER_TABLE1",
    "PAPER_STATIC_DIM",
    "GLUE_TASKS",
    "GLUE_CLASSIFICATION_TASKS",
    "DISTILROBERTA",
    "PAPER_GLUE_MODELS",
    "PAPER_TABLE2",
    "SHUFFLED",
    "LABEL_FREE",
    "check_parameters",
]

CITATION = ("Timothee Mickus, Stig-Arne Grönroos and Joseph Attieh (2024), *Isotropy, Clusters, and Classifiers*, "
            "ACL 2024 (short papers)")
TITLE = "Mickus et al. (2024): results of this run"
# The setups by the notebook's names for them; (iii) and (iv) are named by what they are, not what they stand in for.
SETUP_NAMES = {
    "polarity": "(i) polarity",
    "snli": "(ii) SNLI",
    "pos": "(iii) GloVe-50d with WordNet parts of speech",
    "supersenses": "(iv) GloVe-50d with WordNet noun supersenses (one per noun)",
}
# The setups the notebook builds, in the paper's order.
SETUPS = tuple(SETUP_NAMES)
# Table 1: items and trainable parameters per setup, keyed by its numeral (a setup's name starts with it).
PAPER_TABLE1 = {"(i)": (10_662, 4_094_976), "(ii)": (9_842, 4_987_395), "(iii)": (11_462, 4_341_004),
                "(iv)": (2_275, 690_326)}
# The paper's static vectors (word2vec) have 300 dimensions; the stand-in GloVe-50d has 50.
PAPER_STATIC_DIM = 300
# Appendix A: the GLUE training sets in ../shared/data, as (loader, data set, split, sentence columns).
GLUE_TASKS = {
    "cola": ("texts", "cola", "in_domain_train", ("text",)),
    "mrpc": ("pairs", "mrpc", "train", ("sentence1", "sentence2")),
    "rte": ("pairs", "rte", "train", ("sentence1", "sentence2")),
    "sst2": ("texts", "sst2", "train", ("text",)),
}
# Every GLUE classification task with a training set (the paper's Table 2, in its order) and its three models.
GLUE_CLASSIFICATION_TASKS = ("cola", "mnli", "mrpc", "qnli", "qqp", "rte", "sst2", "wnli")
DISTILROBERTA = "sentence-transformers/all-distilroberta-v1"
PAPER_GLUE_MODELS = ("minilm", "mpnet", DISTILROBERTA)
# Table 2: items, then trainable parameters per model ("roberta" in the paper is all-distilroberta-v1, a Hub model).
PAPER_TABLE2 = {
    "cola": (8_551, {"minilm": 3_277_058, "mpnet": 6_554_114, DISTILROBERTA: 6_554_114}),
    "mnli": (392_702, {"minilm": 199_380_483, "mpnet": 398_760_963, DISTILROBERTA: 398_760_963}),
    "mrpc": (3_668, {"minilm": 2_709_506, "mpnet": 5_419_010, DISTILROBERTA: 5_419_010}),
    "qnli": (104_743, {"minilm": 42_617_090, "mpnet": 85_234_178, DISTILROBERTA: 85_234_178}),
    "qqp": (363_846, {"minilm": 189_649_154, "mpnet": 379_298_306, DISTILROBERTA: 379_298_306}),
    "rte": (2_490, {"minilm": 1_738_370, "mpnet": 3_476_738, DISTILROBERTA: 3_476_738}),
    "sst2": (67_349, {"minilm": 25_720_322, "mpnet": 51_440_642, DISTILROBERTA: 51_440_642}),
    "wnli": (635, {"minilm": 356_738, "mpnet": 713_474, DISTILROBERTA: 713_474}),
}
# The controls (ours), as the ``control`` column of the controls' table names them.
SHUFFLED, LABEL_FREE = "shuffled labels", "label-free"


def check_parameters(params: dict) -> None:
    """Refuse, in one sentence, parameters of notebook 04 its run would fail on (the runner calls it before any kernel).

    Parameters
    ----------
    params : dict
        Every parameter of the notebook: the defaults of its parameters cell completed by the run's.
    """
    check_choices(params, "setups", SETUPS)
    check_choices(params, "control_setups", tuple(params["setups"]))
    check_choices(params, "glue_tasks", tuple(GLUE_TASKS))
    if params["glue_tasks"] or params["glue_models"]:  # both empty skips the appendix
        check_models(params, "glue_models")
    check_integers(params, ["n_items", "seeds", "random_state"])
    check_integers(params, ["n_updates", "glue_updates", "control_every"], minimum=1)
    check_integers(params, ["glue_sample_size"], minimum=2)  # the silhouette needs two items
