"""Everything a model card measures: its evidence, as tables at the granularity its statements resample.

:func:`card_evidence` reads one model's spaces (each layer and, for a decoder, each view of its first
position), then measures them with the library notebook 05 uses:

* ``measures`` and ``changes`` -- every measure of :mod:`isolib.measures` on ``n_replicates`` samples of
  ``n_points`` word tokens of each layer (:func:`isolib.measuring.measure_spaces`), and the measures read
  off one spectrum after each post-processing of :data:`~isolib.card.settings.POST_PROCESSINGS` of the first
  sample; the static
  baseline (GloVe) measured on the same number of distinct words of the same windows;
* ``rogue_shares`` and ``rogue_resamples`` -- the top coordinates' share of the average cosine against a
  random rotation (:func:`isolib.measuring.rogue_shares`);
* ``clusters`` and ``cluster_control`` -- the best k-means partition of each layer's first sample, each
  cluster with its dominant token type and its median norm against the rest (what the artefact rule of
  :func:`isolib.findings.artefact_reason` reads), beside the same selection on a Gaussian cloud of the
  layer's mean and covariance;
* ``sink_norms``, ``sink_library`` and ``attention`` (a decoder) -- the norm of each window's first and
  second positions against the tokens after them, the library's :func:`isolib.embed.first_position_norm_ratio`,
  and where the model exposes it, the share of attention each draws;
* ``sts`` and ``sts_gold`` -- each STS-B dev pair's cosine at every layer, its token vectors mean-pooled into
  sentence vectors (:func:`mean_pooling` is :func:`isolib.evaluation.mean_pool` in one sparse product), raw and
  after each post-processing of the layer's sentence vectors, fitted on the dev set's sentences (as whitening
  of sentence vectors is used for similarity; notebook 03 post-processes tokens, as Rajaee & Pilehvar did, at
  about 12 times the cost).

Nothing here judges: :mod:`isolib.card.claims` reads these tables only.
"""

from __future__ import annotations

import dataclasses
import re
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from isolib._checks import rng, sample_rows
from isolib.card.settings import POST_PROCESSINGS, SPECTRUM_MEASURES, CardSettings
from isolib.datasets import load_corpus, load_sts
from isolib.embed import Embeddings, _tokenize, embed_views, first_position_norm_ratio
from isolib.errors import ModelError
from isolib.evaluation import sts_correlation
from isolib.measuring import ChangeSettings, MeasureOptions, measure_spaces, rogue_shares
from isolib.metrics import select_kmeans
from isolib.models import OFFLINE_MODELS, LoadedModel, load_model, load_static
from isolib.sampling import Sample, analysed_tokens, draw_token_samples, static_sample, token_samples
from isolib.transforms import abtt, centre, standardise, whiten
from isolib.views import View
from isolib.windows import running_text_windows

__all__ = ["Spaces", "card_evidence", "check_hidden_states", "encoded_inputs", "read_spaces", "cluster_table", "sink_norms", "attention_shares", "mean_pooling",
           "sts_similarities"]


@dataclass
class Spaces:
    """A model's spaces: its layers (and views), the token samples drawn from each, and how to read their points.

    Attributes
    ----------
    model : str
    kind : {"encoder", "decoder", "static"}
    cells : list of dict
        One per (view, layer): ``space`` (the view's label), ``model``, ``view``, ``layer``; the static
        baseline last (``view`` "static").
    samples : dict of str to list of pandas.DataFrame
        Per space, the drawn tokens of each replicate (:func:`isolib.sampling.draw_token_samples`).
    embeddings : dict of str to Embeddings
        Per view label, the embeddings of the windows (empty for a static model).
    static : isolib.evaluation.WordVectors or None
        The static vectors read for the baseline (or the model, when it is static).
    loaded : LoadedModel or None
        The transformer (None for a static model).
    windows : pandas.DataFrame
        The windows of running text (``text``).
    facts : dict
        What the card says about the run (window length, tokens, views).
    """

    model: str
    kind: str
    cells: list
    samples: dict
    embeddings: dict
    static: object
    loaded: LoadedModel | None
    windows: pd.DataFrame
    facts: dict

    def points(self, space: str, layer: int):
        """The token samples of one cell, read from the cache (a callable, so that one cell is read at a time)."""
        def read() -> list[Sample]:
            vectors = self.static.matrix if space not in self.embeddings else self.embeddings[space].layer(layer)
            return token_samples(vectors, self.samples[space])
        return read


def check_hidden_states(loaded: LoadedModel) -> None:
    """Refuse, in one sentence, a model whose forward pass on a text alone returns no hidden state per layer.

    An encoder-decoder (T5) needs decoder inputs, a vision or audio model takes no text, and some heads return
    only logits: a card reads ``hidden_states``, one per layer, of a text alone.

    Raises
    ------
    isolib.errors.ModelError
        Naming the model and what its forward pass gave instead.
    """
    import torch

    batch = loaded.tokenizer(["a short text"], return_tensors="pt")
    try:
        with torch.inference_mode():
            states = getattr(loaded.model(**{name: values.to(loaded.model.device) for name, values in batch.items()}),
                             "hidden_states", None)
        gave = "none" if states is None else f"{len(states)}, not {loaded.n_layers}"
    except Exception as error:  # each architecture fails its own way: ValueError, TypeError, RuntimeError ...
        states, gave = None, f"{type(error).__name__}: " + (str(error).strip().splitlines() or ["no message"])[0].rstrip(".")
    if states is None or len(states) != loaded.n_layers:
        raise ModelError(f"{loaded.name} gives no hidden states for a text alone ({gave}); a card measures models "
                         "whose forward pass on a text returns one hidden state per layer, such as BERT or GPT-2.")


def encoded_inputs(tokenizer, texts, *, max_length: int, start_token: bool) -> list[dict]:
    """The model inputs of each text exactly as :func:`isolib.embed.embed` builds them (a start token prepended
    where asked), for a forward pass that must see the same tokens: per text, each input's name to its list of ints.

    ``isolib.embed``'s own tokenisation, called here rather than given a public twin there: its code keys the
    studies' stored steps, which a change to it would compute again.
    """
    encoded = _tokenize(tokenizer, list(texts), max_length, start_token)
    return [{name: values[i] for name, values in encoded.inputs.items()} for i in range(len(encoded.offsets))]


def _refuse_small_corpus(settings: CardSettings, available: int, model: str) -> None:
    if settings.token_budget > available:
        raise ValueError(f"The token budget {settings.token_budget:,} is more than the {available:,} tokens "
                         f"{settings.corpus} ({settings.split}) makes for {model}; lower it to at most {available:,}.")


def _refuse_few_tokens(settings: CardSettings, count: int, model: str) -> None:
    if count < settings.n_points:
        raise ValueError(f"The token budget {settings.token_budget:,} gives {count:,} word tokens of "
                         f"{settings.corpus} for {model}, fewer than the {settings.n_points:,} each sample draws; "
                         "raise the token budget or lower n_points.")


def read_spaces(model: str, settings: CardSettings) -> Spaces:
    """Load ``model``, cut the corpus into windows, read (or extract) the embeddings and draw the token samples.

    Raises
    ------
    isolib.errors.ModelError
        For a name no model answers to, or a model that returns no hidden states.
    ValueError
        For a corpus with fewer tokens than the budget, or a budget with fewer word tokens than a sample.
    """
    settings.check()
    lines = load_corpus(settings.corpus, split=settings.split).text
    if model in OFFLINE_MODELS and OFFLINE_MODELS[model].kind == "static":
        return _static_spaces(model, lines.tolist(), settings)
    loaded = load_model(model, device=settings.device)
    check_hidden_states(loaded)
    window_length = min(settings.window_length, loaded.max_tokens)
    windows = running_text_windows(lines, loaded.tokenizer, window_length=window_length,
                                   token_budget=settings.token_budget, random_state=settings.random_state)
    _refuse_small_corpus(settings, windows.attrs["n_pieces"], model)
    views = ("start_token",) if loaded.tokenizer.bos_token_id is not None else ("drop",)
    embeddings = embed_views(loaded, windows.text.tolist(), views=views,
                             layers=None if settings.layers is None else list(settings.layers),
                             max_length=window_length, batch_size=8, dtype=settings.storage_dtype,
                             device=settings.device)
    analysed = {label: analysed_tokens(embedding.tokens) for label, embedding in embeddings.items()}
    samples = draw_token_samples(analysed, settings.n_points, settings.n_replicates,
                                 random_state=settings.random_state)
    _refuse_few_tokens(settings, min(len(drawn) for drawn in samples[model]), model)
    cells = [{"space": label, "model": model, "view": embedding.first_position, "layer": layer}
             for label, embedding in embeddings.items() for layer in embedding.layers]
    static = None
    if settings.static_baseline:
        static = load_static(settings.static_baseline)
        samples[settings.static_baseline] = static_sample(embeddings[model].tokens, static.words, settings.n_points,
                                                          settings.n_replicates, random_state=settings.random_state,
                                                          distinct=True)
        cells.append({"space": settings.static_baseline, "model": settings.static_baseline, "view": "static",
                      "layer": 0})
    kind = "decoder" if embeddings[model].starts_with_content else "encoder"
    facts = {"window_length": window_length, "n_windows": len(windows), "n_windows_in_corpus": windows.attrs["n_windows"],
             "tokens": {label: len(embedding.tokens) for label, embedding in embeddings.items()},
             "word_tokens": {label: len(table) for label, table in analysed.items()},
             "checkpoint": loaded.checkpoint, "n_layers": loaded.n_layers, "dim": loaded.dim}
    return Spaces(model, kind, cells, samples, embeddings, static, loaded, windows, facts)


def _static_spaces(model: str, lines: list[str], settings: CardSettings) -> Spaces:
    """A static embedding's one space: the distinct words of windows of ``window_length`` words of the corpus."""
    static = load_static(model)
    words = " ".join(lines).split()
    _refuse_small_corpus(settings, len(words), model)
    n_windows = len(words) // settings.window_length
    chosen = sample_rows(n_windows, max(1, settings.token_budget // settings.window_length), rng(settings.random_state))
    rows = [(window, position, words[window * settings.window_length + position])
            for window in chosen for position in range(settings.window_length)]
    tokens = pd.DataFrame({"sentence_id": [row[0] for row in rows], "position": [row[1] for row in rows],
                           "token": [row[2] for row in rows], "word_id": [row[1] for row in rows],
                           "word": [row[2] for row in rows], "is_special": False})
    drawn = static_sample(tokens, static.words, settings.n_points, settings.n_replicates,
                          random_state=settings.random_state, distinct=True)
    _refuse_few_tokens(settings, len(drawn[0]), model)
    windows = pd.DataFrame({"window": chosen, "text": [" ".join(words[w * settings.window_length:
                                                                      (w + 1) * settings.window_length])
                                                         for w in chosen]})
    facts = {"window_length": settings.window_length, "n_windows": len(chosen), "n_windows_in_corpus": n_windows,
             "tokens": {model: len(tokens)}, "word_tokens": {model: len(analysed_tokens(tokens))},
             "checkpoint": OFFLINE_MODELS[model].checkpoint, "n_layers": 1, "dim": int(static.matrix.shape[1])}
    return Spaces(model, "static", [{"space": model, "model": model, "view": "static", "layer": 0}], {model: drawn},
                  {}, static, None, windows, facts)


# --------------------------------------------------------------------------- measurements per cell


def _in_workers(function: Callable, tasks, n_jobs: int) -> list:
    """``function(*task)`` for every task, in ``n_jobs`` worker processes (1: here), each on one BLAS thread."""
    from threadpoolctl import threadpool_limits

    def one(*task):
        with threadpool_limits(1):
            return function(*task)

    if n_jobs == 1:
        return [one(*task) for task in tasks]
    from joblib import Parallel, delayed

    return Parallel(n_jobs=n_jobs)(delayed(one)(*task) for task in tasks)


def _gaussian_like(points: np.ndarray, generator: np.random.Generator) -> np.ndarray:
    """As many points drawn from the Gaussian of the points' mean and covariance (no cluster, same spread)."""
    mean = points.mean(axis=0)
    values, vectors = np.linalg.eigh(np.cov(points, rowvar=False))
    scales = np.sqrt(np.clip(values, 0.0, None))
    return mean + (generator.standard_normal(points.shape) * scales) @ vectors.T


def cluster_table(cell: dict, sample: Sample, settings: CardSettings, seed: int) -> tuple[list, dict]:
    """The best k-means partition of one cell's sample, described cluster by cluster, and its Gaussian control.

    The partition is the one :func:`isolib.measuring.every_measure` scores on the same sample with the
    same seed (k from 2 to ``k_max``, the best silhouette), so the silhouette here is the measures table's.

    Returns
    -------
    clusters : list of dict
        Per cluster: the cell's ``space`` and ``layer``, ``cluster``, ``size``, ``dominant_type`` and
        ``dominant_share`` (its most frequent token type and that type's share of it), ``norm_ratio`` (its
        median norm over the median norm of the points outside it) and ``first_position_share``.
    control : dict
        The cell's ``space`` and ``layer``, ``k`` and ``silhouette`` of the partition, and ``gaussian_k`` and
        ``gaussian_silhouette``: the same selection on a Gaussian cloud of the points' mean and covariance.
    """
    points = np.asarray(sample.points, dtype=np.float64)
    k_range = range(2, max(2, min(settings.k_max, len(points) - 2)) + 1)
    options = {"threshold": -1.0, "sample_size": settings.silhouette_sample or None,
               "fit_size": settings.kmeans_fit_size or None, "n_init": settings.n_init}
    chosen = select_kmeans(points, k_range, random_state=seed, **options)
    gaussian = select_kmeans(_gaussian_like(points, rng(seed)), k_range, random_state=seed, **options)
    norms = np.linalg.norm(points, axis=1)
    types = pd.Series(sample.types if sample.types is not None else np.arange(len(points)).astype(str))
    first = np.zeros(len(points), bool) if sample.positions is None else np.asarray(sample.positions) == 0
    key = {"space": cell["space"], "layer": cell["layer"]}
    clusters = []
    for cluster in range(chosen.n_clusters):
        inside = chosen.labels == cluster
        counts = types[inside].value_counts()
        outside = norms[~inside]
        clusters.append({**key, "cluster": cluster, "size": int(inside.sum()), "dominant_type": str(counts.index[0]),
                         "dominant_share": float(counts.iloc[0] / inside.sum()),
                         "norm_ratio": float(np.median(norms[inside]) / np.median(outside)) if len(outside) else np.nan,
                         "first_position_share": float(first[inside].mean())})
    control = {**key, "k": chosen.n_clusters, "silhouette": float(chosen.by_k().silhouette.max()),
               "gaussian_k": gaussian.n_clusters, "gaussian_silhouette": float(gaussian.by_k().silhouette.max())}
    return clusters, control


def _clusters(spaces: Spaces, settings: CardSettings) -> tuple[pd.DataFrame, pd.DataFrame]:
    # The seed of every_measure on replicate 0 (isolib.measuring), so that the partition is the one it scores.
    seed = int(rng([settings.random_state, 0]).integers(2**31 - 1))
    tasks = ((cell, spaces.points(cell["space"], cell["layer"])()[0], settings, seed) for cell in spaces.cells)
    results = _in_workers(cluster_table, tasks, settings.n_jobs)
    return (pd.DataFrame([row for clusters, _ in results for row in clusters]),
            pd.DataFrame([control for _, control in results]))


# --------------------------------------------------------------------------- the first position of a decoder


def sink_norms(label: str, embedding: Embeddings) -> pd.DataFrame:
    """Per layer and window: the norms of positions 0 and 1 and of the word tokens after them.

    Position 0 is the first word in the papers' view and the start token in the start-token view.

    Returns
    -------
    pandas.DataFrame, one row per (layer, window)
        ``space`` (``label``), ``layer``, ``window``, ``first`` and ``second`` (the norms of positions 0 and
        1), ``rest_sum`` and ``rest_count`` (the sum and number of the norms of the non-special tokens at
        positions 2 and later).
    """
    tokens = embedding.tokens
    position, window = tokens.position.to_numpy(), tokens.sentence_id.to_numpy()
    rest = (position >= 2) & ~tokens.is_special.to_numpy(bool)
    first, second = np.flatnonzero(position == 0), np.flatnonzero(position == 1)
    windows = np.unique(window[first])
    index = {value: i for i, value in enumerate(windows)}
    second = second[np.isin(window[second], windows)]
    tables = []
    for layer in embedding.layers:
        norms = np.linalg.norm(np.asarray(embedding.layer(layer), dtype=np.float32), axis=1).astype(np.float64)
        at = np.array([index[value] for value in window[rest]], dtype=int) if rest.any() else np.zeros(0, int)
        table = pd.DataFrame({"space": label, "layer": layer, "window": windows, "first": norms[first],
                              "second": np.nan, "rest_sum": np.bincount(at, norms[rest], minlength=len(windows)),
                              "rest_count": np.bincount(at, minlength=len(windows))})
        table.loc[[index[value] for value in window[second]], "second"] = norms[second]
        tables.append(table)
    return pd.concat(tables, ignore_index=True)


def attention_shares(loaded: LoadedModel, texts, *, first_position: str, max_length: int) -> tuple[pd.DataFrame, str]:
    """The share of attention positions 0 and 1 draw, per layer and window, where the model exposes attention.

    The mean over heads of the attention weight every query after a position gives to it (queries 1 and
    later for position 0, 2 and later for position 1), from the same inputs :func:`isolib.embed.embed`
    builds. The model runs with eager attention for this, then gets its own implementation back (the
    embeddings of the cache are never computed with another one).

    Returns
    -------
    shares : pandas.DataFrame
        ``layer`` (1 to the last: the attention of block ``layer``), ``window``, ``first_share``,
        ``second_share``; empty where the model exposes no attention.
    reason : str
        Why there is none ("" when there is).
    """
    import torch

    model = loaded.model
    previous = getattr(model.config, "_attn_implementation", None)
    rows = []
    try:
        model.set_attn_implementation("eager")
        for window, inputs in enumerate(encoded_inputs(loaded.tokenizer, list(texts), max_length=max_length,
                                                       start_token=first_position == "start_token")):
            batch = {name: torch.tensor([values], device=model.device) for name, values in inputs.items()}
            with torch.inference_mode():
                attentions = model(**batch, output_attentions=True).attentions
            if not attentions or attentions[0] is None:
                return pd.DataFrame(), f"{loaded.name} returns no attention weights"
            for layer, weights in enumerate(attentions, start=1):
                weights = weights[0].float().mean(dim=0)  # (queries, keys), the mean over heads
                rows.append({"layer": layer, "window": window, "first_share": float(weights[1:, 0].mean()),
                             "second_share": float(weights[2:, 1].mean())})
    except (AttributeError, ValueError, NotImplementedError, RuntimeError) as error:
        cause = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return pd.DataFrame(), f"{loaded.name} does not expose its attention ({cause})"
    finally:
        if previous is not None and hasattr(model, "set_attn_implementation"):
            model.set_attn_implementation(previous)
    return pd.DataFrame(rows), ""


def _first_position(spaces: Spaces, settings: CardSettings) -> dict:
    """The sink's evidence of a decoder: norms per window, the library's ratio, attention per window."""
    norms, library, attention, reasons = [], [], [], []
    texts = spaces.windows.text.tolist()[:settings.attention_windows]
    for label, embedding in spaces.embeddings.items():
        if embedding.first_position == "drop":
            continue  # position 0 is not there
        norms.append(sink_norms(label, embedding))
        if embedding.first_position == "keep":
            library.append(first_position_norm_ratio(embedding).reset_index().assign(space=label))
        shares, reason = attention_shares(spaces.loaded, texts, first_position=embedding.first_position,
                                          max_length=spaces.facts["window_length"])
        attention.append(shares.assign(space=label) if len(shares) else shares)
        reasons.append(reason)
    return {"sink_norms": pd.concat(norms, ignore_index=True), "sink_library": pd.concat(library, ignore_index=True),
            "attention": pd.concat(attention, ignore_index=True) if any(len(a) for a in attention) else
            pd.DataFrame({"space": pd.Series(dtype=str), "layer": pd.Series(dtype=int),
                          "window": pd.Series(dtype=int), "first_share": pd.Series(dtype=float),
                          "second_share": pd.Series(dtype=float)}),
            "attention_reason": next((reason for reason in reasons if reason), "")}


# --------------------------------------------------------------------------- the similarity task


def _post_processed(vectors: np.ndarray, method: str, abtt_components: int) -> np.ndarray:
    if method == "raw":
        return vectors
    if method == "centre":
        return centre(vectors)
    if method == "abtt":
        return abtt(vectors, min(abtt_components, vectors.shape[1] - 1))
    return whiten(vectors) if method == "whiten" else standardise(vectors)


def mean_pooling(sentence_ids: np.ndarray, n_sentences: int):
    """The mean over each sentence's tokens as a sparse ``(n_sentences, n_tokens)`` matrix ``P``.

    ``P @ X`` is :func:`isolib.evaluation.mean_pool` of ``X`` (to rounding) in one pass over ``X``, so a layer's
    tokens are pooled again after each post-processing at the cost of one product.

    Raises
    ------
    ValueError
        If a sentence has no token.
    """
    from scipy import sparse

    counts = np.bincount(sentence_ids, minlength=n_sentences)
    if (counts == 0).any():
        raise ValueError(f"sentence {int(np.flatnonzero(counts == 0)[0])} has no (non-special) token to average.")
    return sparse.csr_matrix((1.0 / counts[sentence_ids], (sentence_ids, np.arange(len(sentence_ids)))),
                             shape=(n_sentences, len(sentence_ids)))


def sts_similarities(label: str, layer: int, read: Callable, sentence_ids: np.ndarray, n_sentences: int,
                     first: np.ndarray, second: np.ndarray, abtt_components: int) -> pd.DataFrame:
    """Each pair's cosine of one layer's mean-pooled token vectors, raw and after each post-processing of them.

    Parameters
    ----------
    label : str
        The space (view label).
    layer : int
    read : callable
        Returns the layer's token vectors, ``(n_tokens, dim)``, special tokens left out.
    sentence_ids : ndarray of int, shape (n_tokens,)
    n_sentences : int
    first, second : ndarray of int, shape (n_pairs,)
        The sentences of each pair.
    abtt_components : int

    Returns
    -------
    pandas.DataFrame, one row per (method, pair)
        ``space``, ``layer``, ``method`` ("raw" or one of :data:`~isolib.card.settings.POST_PROCESSINGS`),
        ``pair``, ``similarity``.
    """
    sentences = np.asarray(mean_pooling(sentence_ids, n_sentences) @ np.asarray(read(), dtype=np.float64))
    tables = []
    for method in ("raw", *POST_PROCESSINGS):
        processed = _post_processed(sentences, method, abtt_components)
        similarities = sts_correlation(processed[first], processed[second], np.arange(len(first))).similarities
        tables.append(pd.DataFrame({"space": label, "layer": layer, "method": method, "pair": np.arange(len(first)),
                                    "similarity": similarities.astype(np.float32)}))
    return pd.concat(tables, ignore_index=True)


_WORD = re.compile(r"[\w'-]+|[^\w\s]")


def _sts(spaces: Spaces, settings: CardSettings) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """STS-B dev: the pairs' similarities per space, layer and post-processing, and the gold scores."""
    pairs = load_sts("stsb", split="dev")
    pairs = pairs.iloc[:settings.sts_pairs or None].reset_index(drop=True)
    sentences = list(dict.fromkeys(pd.concat([pairs.sentence1, pairs.sentence2])))
    index = {sentence: i for i, sentence in enumerate(sentences)}
    first, second = pairs.sentence1.map(index).to_numpy(), pairs.sentence2.map(index).to_numpy()
    tasks = []
    if spaces.kind == "static":
        row = {word: i for i, word in enumerate(spaces.static.words)}
        found = [[row[word] for word in _WORD.findall(sentence.lower()) if word in row] for sentence in sentences]
        covered = np.array([bool(rows) for rows in found])
        kept = covered[first] & covered[second]
        renumber = np.cumsum(covered) - 1
        ids = np.concatenate([[renumber[i]] * len(rows) for i, rows in enumerate(found) if rows]).astype(int)
        vectors = spaces.static.matrix[np.concatenate([rows for rows in found if rows])]
        first, second, pairs = renumber[first[kept]], renumber[second[kept]], pairs[kept].reset_index(drop=True)
        tasks.append((spaces.model, 0, lambda: vectors, ids, int(covered.sum()), first, second, settings.abtt_components))
    else:
        views = tuple(View.parse(label).first_position for label in spaces.embeddings if label != spaces.model)
        for label, embedding in embed_views(spaces.loaded, sentences, views=views, keep_special=False,
                                            layers=None if settings.layers is None else list(settings.layers),
                                            dtype=settings.storage_dtype, device=settings.device).items():
            ids = embedding.tokens.sentence_id.to_numpy()
            tasks += [(label, layer, _Reader(embedding, layer), ids, len(sentences), first, second,
                       settings.abtt_components) for layer in embedding.layers]
    similarities = pd.concat(_in_workers(sts_similarities, tasks, settings.n_jobs), ignore_index=True)
    gold = pd.DataFrame({"pair": np.arange(len(pairs)), "score": pairs.score.to_numpy(dtype=float)})
    return similarities, gold, {"pairs": len(pairs), "sentences": len(sentences)}


@dataclass(frozen=True)
class _Reader:
    """A layer of an :class:`~isolib.embed.Embeddings` read when called (picklable, for worker processes)."""

    embedding: Embeddings
    layer: int

    def __call__(self) -> np.ndarray:
        return self.embedding.layer(self.layer)


# --------------------------------------------------------------------------- the card's evidence


def card_evidence(model: str, settings: CardSettings = CardSettings()) -> dict:
    """Every table a card's statements read, and the run's facts (``run``).

    Parameters
    ----------
    model : str
        An offline model (``minilm``, ``mpnet``, ``smollm2``, ``glove-50d``), a model folder or a Hub id.
    settings : CardSettings

    Returns
    -------
    dict
        The tables of the module docstring, and ``run``: the settings, the model (kind, checkpoint, layers,
        dimension), the windows and tokens, the views, what could not be measured and why, the seconds
        each step took.
    """
    started = time.perf_counter()
    spaces = read_spaces(model, settings)
    seconds = {"read": time.perf_counter() - started}
    options = MeasureOptions(baseline_samples=settings.baseline_samples, lid_k=settings.lid_k,
                             lid_queries=settings.lid_queries or None, k_max=settings.k_max, n_init=settings.n_init,
                             kmeans_fit_size=settings.kmeans_fit_size or None,
                             silhouette_sample=settings.silhouette_sample or None)
    # Each post-processing changes the first sample of a layer, measured again by the spectrum's measures: what
    # it changes, at a fraction of the cost of every measure of every sample.
    changes = ChangeSettings(abtt_components=settings.abtt_components, changes=POST_PROCESSINGS,
                             measures=SPECTRUM_MEASURES, replicates=1)
    tic = time.perf_counter()
    measures, changed = measure_spaces(((cell, spaces.points(cell["space"], cell["layer"])) for cell in spaces.cells),
                                       options, changes, n_replicates=settings.n_replicates,
                                       random_state=settings.random_state, n_jobs=settings.n_jobs)
    rogue, rogue_resamples = rogue_shares([(cell, spaces.points(cell["space"], cell["layer"])()[0])
                                           for cell in spaces.cells], n_resamples=settings.n_resamples,
                                          random_state=settings.random_state)
    clusters, cluster_control = _clusters(spaces, settings)
    seconds["measures"] = time.perf_counter() - tic
    evidence = {"measures": measures.drop(columns="seconds"), "changes": changed.drop(columns="seconds"),
                "rogue_shares": rogue, "rogue_resamples": rogue_resamples, "clusters": clusters,
                "cluster_control": cluster_control}
    tic = time.perf_counter()
    first_position = _first_position(spaces, settings) if spaces.kind == "decoder" else {}
    reason = first_position.pop("attention_reason", "")
    evidence |= first_position
    seconds["first_position"] = time.perf_counter() - tic
    tic = time.perf_counter()
    evidence["sts"], evidence["sts_gold"], sts_facts = _sts(spaces, settings)
    seconds["sts"] = time.perf_counter() - tic
    parameters = dataclasses.asdict(settings) | {"layers": None if settings.layers is None else list(settings.layers)}
    evidence["run"] = {"parameters": parameters, "model": model, "kind": spaces.kind, **spaces.facts,
                       "views": list(spaces.embeddings) or [model], "attention": reason, "sts": sts_facts,
                       "seconds": seconds}
    return evidence
