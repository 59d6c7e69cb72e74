"""What a model card runs with: the default token budget, the post-processings, every setting and its check.

Nothing here computes; :mod:`isolib.card.compute` reads a :class:`CardSettings`, and its
:meth:`~CardSettings.check` refuses a setting a card would fail on, in one sentence, before any model is
loaded. Notebook 06 and ``python -m isolib card`` build their settings here.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DEFAULT_TOKEN_BUDGET", "CORPORA", "SPLITS", "POST_PROCESSINGS", "SPECTRUM_MEASURES", "CardSettings", "card_folder_name",
           "check_notebook_parameters"]

# The default token budget: 16 windows of 512 tokens (notebooks 02 and 05's quick budget, so a card reads the
# embeddings those runs cache). With it SmolLM2's card (31 layers, two views, 62 cells) measures in about the
# time benchmarks/results/card.md records, under 10 minutes on two cores once the embeddings are cached.
DEFAULT_TOKEN_BUDGET = 8192
CORPORA = ("ptb", "wikitext2")
SPLITS = ("train", "valid", "test")
# The post-processings whose effect a card reports, as keys of isolib.measures.CHANGES, in order.
POST_PROCESSINGS = ("centre", "abtt", "whiten", "standardise")
# The measures recomputed after each post-processing: those read off one spectrum (cheap), and the average cosine.
SPECTRUM_MEASURES = ("average_cosine", "iw", "isoscore", "effective_rank", "top_dimension_share",
                     "top_direction_share")


@dataclass(frozen=True)
class CardSettings:
    """Every setting of a model card (the defaults are ``python -m isolib card``'s).

    Attributes
    ----------
    corpus : {"ptb", "wikitext2"}
        Running text, cut into windows as notebooks 02 and 05 cut it.
    split : {"train", "valid", "test"}
        Its split (notebooks 02 and 05 read train).
    window_length : int
        Tokens per window, special tokens included (at most the model's own limit).
    token_budget : int
        About this many tokens in windows drawn at random (:data:`DEFAULT_TOKEN_BUDGET`); a corpus with fewer
        tokens is refused.
    layers : tuple of int or None
        Layers measured (None: every layer; 0 is the input embeddings).
    static_baseline : str
        Static vectors measured on the words of the same windows, at the same number of points ("" for none).
    n_points, n_replicates : int
        Tokens per sample and independent samples per layer: every interval over token samples is over these.
    baseline_samples, lid_k, lid_queries, k_max, n_init, kmeans_fit_size, silhouette_sample : int
        How the costly measures are estimated (:class:`isolib.measuring.MeasureOptions`; 0: all points).
    abtt_components : int
        Principal directions all-but-the-top removes after centring (Rajaee & Pilehvar's global setting).
    attention_windows : int
        Windows whose attention is read to diagnose a decoder's attention sink.
    sts_pairs : int
        STS-B dev pairs scored (0: all 1,500).
    n_resamples : int
        Bootstrap resamples of every interval.
    n_jobs : int
        Layers measured at once in worker processes (-1: one per core).
    storage_dtype : {"float16", "float32"}
        Cache dtype of the embeddings.
    device : str
        Torch device of the forward passes.
    random_state : int
        Seed of the window draw, the samples, the clusterings and the resamples.
    """

    corpus: str = "ptb"
    split: str = "train"
    window_length: int = 512
    token_budget: int = DEFAULT_TOKEN_BUDGET
    layers: tuple[int, ...] | None = None
    static_baseline: str = "glove-50d"
    n_points: int = 1000
    n_replicates: int = 3
    baseline_samples: int = 1000
    lid_k: int = 100
    lid_queries: int = 500
    k_max: int = 6
    n_init: int = 1
    kmeans_fit_size: int = 1000
    silhouette_sample: int = 1000
    abtt_components: int = 15
    attention_windows: int = 4
    sts_pairs: int = 0
    n_resamples: int = 1000
    n_jobs: int = -1
    storage_dtype: str = "float16"
    device: str = "cpu"
    random_state: int = 0

    def check(self) -> None:
        """Refuse, in one sentence naming the setting, a value a card would fail on."""
        if self.corpus not in CORPORA:
            raise ValueError(f"corpus must be one of {', '.join(CORPORA)}; got {self.corpus!r}.")
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}; got {self.split!r}.")
        if self.storage_dtype not in ("float16", "float32"):
            raise ValueError(f"storage_dtype must be float16 or float32; got {self.storage_dtype!r}.")
        if self.static_baseline not in ("", "glove-50d"):
            raise ValueError(f"static_baseline must be glove-50d or empty; got {self.static_baseline!r}.")
        counts = {"window_length": 3, "token_budget": 1, "n_points": 10, "n_replicates": 2, "baseline_samples": 2,
                  "lid_k": 2, "k_max": 2, "n_init": 1, "abtt_components": 1, "attention_windows": 1,
                  "n_resamples": 1, "lid_queries": 0, "kmeans_fit_size": 0, "silhouette_sample": 0, "sts_pairs": 0,
                  "random_state": 0}
        for name, least in counts.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(f"{name} must be an integer of at least {least}; got {value!r}.")
        if self.lid_k >= self.n_points - 1:
            raise ValueError(f"lid_k ({self.lid_k}) must be below n_points - 1 ({self.n_points - 1}): the LID "
                             "needs that many neighbours of each point.")
        if not isinstance(self.n_jobs, int) or self.n_jobs == 0 or self.n_jobs < -1:
            raise ValueError(f"n_jobs must be a number of worker processes (1 measures here, -1 one per core); "
                             f"got {self.n_jobs!r}.")
        if self.layers is not None and not all(isinstance(layer, int) and not isinstance(layer, bool)
                                               for layer in self.layers):
            raise ValueError(f"layers must be layer numbers (0 is the input embeddings); got {self.layers!r}.")

    def replace(self, **changes) -> CardSettings:
        """These settings with ``changes``, checked."""
        settings = dataclasses.replace(self, **changes)
        settings.check()
        return settings


def card_folder_name(model: str) -> str:
    """The folder a model's card is written to inside a folder of cards: ``minilm``, ``org--name`` for a Hub id
    ``org/name``, a local folder's own name."""
    name = Path(model).name if Path(model).expanduser().is_dir() else model.replace("/", "--")
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "model"


# Notebook 06's parameters that are settings of every card it writes.
_NOTEBOOK_SETTINGS = ("corpus", "token_budget", "n_points", "n_replicates", "sts_pairs", "static_baseline",
                      "n_resamples", "n_jobs", "storage_dtype", "device", "random_state")


def check_notebook_parameters(params: dict) -> None:
    """Refuse, in one sentence, parameters of notebook 06 its run would fail on (the runner calls it before any kernel).

    Parameters
    ----------
    params : dict
        Every parameter of the notebook: the defaults of its parameters cell completed by the run's.
    """
    from isolib.checks import check_models

    check_models(params, "models")
    CardSettings(**{name: params[name] for name in _NOTEBOOK_SETTINGS}).check()
