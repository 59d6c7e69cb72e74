"""Everything notebook 01 computes: the evidence its claims judge, and the only code that keys its stored steps.

From a model's embeddings (:mod:`isolib.embed`), grouped by word type
(:mod:`~isolib.studies.ethayarajh_contextuality.occurrences`), this module computes layer by layer the
paper's measures with :mod:`isolib.metrics`, and the PC static vectors of its Table 1
(:mod:`~isolib.studies.ethayarajh_contextuality.static_vectors`):

* :func:`layer_statistics` / :func:`contextuality_by_layer` -- SelfSim per word type, IntraSim per
  sentence and MEV per word type, raw and adjusted for anisotropy, with the baselines of each layer
  from several independent draws of occurrences;
* :func:`contextuality_tables` -- every table of one model's views, stored in the cache
  (:func:`isolib.steps.memoized`) so that its embeddings can be deleted once they are;
* :func:`lowest_self_similarity` and :func:`example_word_pairs` -- the words the stopword finding and
  the slides' per-word MEV finding read (concrete nouns against polysemous verbs of about as many contexts).

These tables are the study's *evidence*: per (view, layer) the baselines and means (``per_layer``), per
(view, layer, draw) the baselines of each random draw (``baselines``), per (view, layer, word type)
SelfSim and MEV (``per_word``), per (view, layer, sentence) IntraSim (``per_sentence``), per (view,
embedding, benchmark) Table 1's scores; every interval of
:mod:`~isolib.studies.ethayarajh_contextuality.claims` is recomputed from them. A stored step is keyed by
this module's code and the code it imports (:func:`isolib.computation.computation_digest`), never by its
prose, nor by the claims, figures or settings.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from isolib import datasets
from isolib._blas import one_blas_thread
from isolib._checks import rng, sample_rows
from isolib.embed import check_views, embed, first_position_norm_ratio
from isolib.evaluation import WordVectors
from isolib.integrity import cache_root, remove_entry
from isolib.metrics import (
    anisotropy_baseline,
    intra_similarity,
    mev,
    mev_baseline,
    self_similarity,
)
from isolib.models import fingerprint
from isolib.steps import memoized
from isolib.studies.ethayarajh_contextuality.occurrences import (
    OccurrenceIndex,
    occurrence_index,
    word_blocks,
)
from isolib.studies.ethayarajh_contextuality.static_vectors import (
    static_embedding_table,
)
from isolib.views import View

__all__ = [
    "STOPWORDS",
    "LIGHT_VERBS",
    "CONCRETE_SUPERSENSES",
    "corpus_sentences",
    "LayerStatistics",
    "layer_statistics",
    "contextuality_by_layer",
    "anisotropy_by_layer",
    "lowest_self_similarity",
    "example_word_pairs",
    "ViewTables",
    "contextuality_tables",
]

# scikit-learn's English stop-word list (318 words), for the paper's "stopwords" finding.
STOPWORDS = frozenset(ENGLISH_STOP_WORDS)
# Verbs whose meaning is mostly carried by their object ("make a decision", "take a walk"), left out of the
# per-word MEV finding's verbs with the stopwords (scikit-learn's list has be, do, get, give, go, have, keep,
# put, take).
LIGHT_VERBS = frozenset({"be", "come", "do", "get", "give", "go", "have", "keep", "let", "make", "put", "set", "take"})
# WordNet noun supersenses (lexicographer files) of things one can touch: the per-word MEV finding's nouns have
# only senses among them (noun.location, where country names are, and noun.object, where continents are, are not).
CONCRETE_SUPERSENSES = frozenset({"noun.animal", "noun.artifact", "noun.body", "noun.food", "noun.plant",
                                  "noun.substance"})


def corpus_sentences(corpus: str = "sts") -> list[str]:
    """Distinct sentences of the study's corpora, both sides of every pair, in first-seen order.

    ``"sts"``: SemEval STS 2012-2016, every sentence (the paper's data). ``"snli"``: the SNLI dev
    set, every pair with or without a gold label (the course slides used SNLI sentences).
    """
    if corpus == "sts":
        return datasets.sts_sentences()
    if corpus == "snli":
        pairs = datasets.load_pairs("snli", split="dev", gold_only=False)
        return list(dict.fromkeys(pd.concat([pairs.sentence1, pairs.sentence2])))
    raise ValueError(f"corpus must be 'sts' or 'snli', got {corpus!r}.")


# --------------------------------------------------------------------------- per-layer measures


@dataclass(frozen=True)
class LayerStatistics:
    """Result of :func:`layer_statistics` for one layer.

    Attributes
    ----------
    summary : dict of str to float
        ``n_words``, ``n_occurrences``; the baselines ``baseline_cosine`` (SelfSim and IntraSim),
        ``mev_baseline`` (uncentred) and ``mev_centred_baseline``; the means over words or
        sentences of the raw measures ``self_similarity``, ``intra_similarity``, ``mev``,
        ``mev_centred``, each with its ``*_adjusted`` value (raw minus the baseline of the layer);
        ``mev_below_baseline``, the share of words whose raw MEV is below ``mev_baseline``;
        ``mev_authors_adjusted``, the authors' code's mixed estimator (centred word MEV minus the
        *uncentred* baseline, REFERENCE.md 01); and ``mean_norm``, the mean norm of the
        occurrence vectors.
    baselines : pandas.DataFrame indexed by draw
        ``baseline_cosine`` and ``mev_baseline`` (uncentred) of each independent draw of occurrences;
        draw 0 is the one of ``summary``.
    per_word : pandas.DataFrame indexed by word
        ``n_contexts``, ``self_similarity``, ``mev``, ``mev_centred`` (raw).
    per_sentence : pandas.Series indexed by sentence_id
        ``intra_similarity`` (raw) of every sentence with an occurrence, in order of first appearance.
    """

    summary: dict
    baselines: pd.DataFrame
    per_word: pd.DataFrame
    per_sentence: pd.Series


def _mev_centred(block: np.ndarray) -> float:
    """Centred MEV, NaN where all occurrences are identical (e.g. a decoder's input layer)."""
    if (block == block[0]).all():
        return np.nan
    return mev(block, centered=True)


def _baseline_draws(vectors: np.ndarray, contexts: np.ndarray, *, n_samples: int, n_draws: int,
                    random_state: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Both baselines of one layer from ``n_draws`` independent draws of ``n_samples`` occurrences.

    Draw ``d`` draws its occurrences as :func:`isolib.metrics.anisotropy_baseline` and
    :func:`isolib.metrics.mev_baseline` do with the seed ``random_state + d`` (so draw 0 gives their values
    with ``random_state``), and both baselines are computed on the same occurrences. Returns the table (one
    row per draw) and the rows of draw 0.
    """
    rows, draws = [], []
    for draw in range(n_draws):
        drawn = sample_rows(len(vectors), n_samples, rng(random_state + draw))
        rows.append({"baseline_cosine": anisotropy_baseline(vectors[drawn], contexts[drawn], n_samples=n_samples),
                     "mev_baseline": mev_baseline(vectors[drawn], n_samples=n_samples)})
        draws.append(drawn)
    return pd.DataFrame(rows).rename_axis("draw"), draws[0]


def layer_statistics(index: OccurrenceIndex, layer_array, *, n_samples: int = 1000,
                     max_occurrences: int | None = None, random_state: int = 0, n_draws: int = 10) -> LayerStatistics:
    """Ethayarajh's contextuality measures of one layer, raw and adjusted for anisotropy.

    * ``SelfSim(w)``: :func:`isolib.metrics.self_similarity` over the occurrences of ``w`` in
      different sentences (pairs inside one sentence are excluded, the paper's definition).
    * ``IntraSim(s)``: :func:`isolib.metrics.intra_similarity` over every occurrence of the
      sentence (punctuation excluded, words below ``min_contexts`` included: they are part of it).
    * ``MEV(w)``: :func:`isolib.metrics.mev` of ``w``'s occurrence matrix, uncentred (the paper's
      formula) and centred (the authors' per-word code, scikit-learn's PCA).
    * Baselines: ``n_samples`` occurrences drawn uniformly from all occurrences of the layer;
      :func:`isolib.metrics.anisotropy_baseline` (mean cosine over the pairs from different
      sentences) and :func:`isolib.metrics.mev_baseline` on the *same* draw. Adjusted = raw minus
      the baseline of the same layer. Means are unweighted over words (or sentences). Both baselines are
      also computed from ``n_draws - 1`` further independent draws (:attr:`LayerStatistics.baselines`), so
      that an interval can cover the baseline's sampling too.

    Parameters
    ----------
    index : OccurrenceIndex
    layer_array : array_like of shape (n_tokens, dim)
    n_samples : int
        Occurrences behind each baseline (the paper: 1,000).
    max_occurrences : int or None
        MEV of a word uses at most this many of its occurrences, drawn uniformly (None: all);
        SelfSim is exact over all occurrences at any frequency.
    random_state : int
        Seed of the baseline draw and of the MEV subsample (draw ``d`` of the baselines: ``random_state + d``).
        With the same seed, every layer draws the same occurrences, so differences between layers are not
        sampling noise.
    n_draws : int
        Independent draws of the baselines' occurrences (the first is the summary's).

    Returns
    -------
    LayerStatistics
    """
    vectors = index.vectors(layer_array)
    contexts = index.occurrences.sentence_id.to_numpy()
    kept = index.occurrences.kept.to_numpy()
    words = index.occurrences.word.to_numpy()[kept]

    with one_blas_thread():
        baselines, drawn = _baseline_draws(vectors, contexts, n_samples=n_samples, n_draws=n_draws,
                                           random_state=random_state)
        baseline_cosine, baseline_mev = map(float, baselines.loc[0, ["baseline_cosine", "mev_baseline"]])
        baseline_mev_centred = mev_baseline(vectors[drawn], n_samples=n_samples, centered=True)
        self_sim = self_similarity(vectors[kept], words, contexts[kept]).reindex(index.words)
        intra_sim = intra_similarity(vectors, contexts)
        blocks = list(word_blocks(index, vectors, max_occurrences, random_state))
        per_word = pd.DataFrame({
            "n_contexts": index.n_contexts,
            "self_similarity": self_sim,
            "mev": pd.Series({word: mev(block) for word, block in blocks}),
            "mev_centred": pd.Series({word: _mev_centred(block) for word, block in blocks}),
        }).reindex(index.words)

    summary = {
        "n_words": len(per_word),
        "n_occurrences": int(kept.sum()),
        "mean_norm": float(np.linalg.norm(vectors, axis=1).mean()),
        "baseline_cosine": baseline_cosine,
        "self_similarity": float(per_word.self_similarity.mean()),
        "self_similarity_adjusted": float(per_word.self_similarity.mean() - baseline_cosine),
        "intra_similarity": float(intra_sim.mean()),
        "intra_similarity_adjusted": float(intra_sim.mean() - baseline_cosine),
        "mev_baseline": baseline_mev,
        "mev": float(per_word.mev.mean()),
        "mev_adjusted": float(per_word.mev.mean() - baseline_mev),
        "mev_below_baseline": float((per_word.mev < baseline_mev).mean()),
        "mev_centred_baseline": baseline_mev_centred,
        "mev_centred": float(per_word.mev_centred.mean()),
        "mev_centred_adjusted": float(per_word.mev_centred.mean() - baseline_mev_centred),
        "mev_authors_adjusted": float(per_word.mev_centred.mean() - baseline_mev),
    }
    return LayerStatistics(summary, baselines, per_word,
                           intra_sim.rename_axis("sentence_id").rename("intra_similarity"))


# What a stored step depends on besides its inputs (:func:`isolib.steps.memoized`): this module's code and the
# code it imports, never its prose.
_CODE = (sys.modules[__name__],)


def contextuality_by_layer(embeddings, index: OccurrenceIndex, *, n_samples: int = 1000,
                           max_occurrences: int | None = None, random_state: int = 0,
                           resume: bool = False) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """:func:`layer_statistics` for every stored layer of one model.

    Parameters
    ----------
    embeddings : isolib.embed.Embeddings
    index : OccurrenceIndex
        Built from ``embeddings.tokens``.
    n_samples, max_occurrences, random_state
        As in :func:`layer_statistics`.
    resume : bool
        Store each layer's statistics in the cache (:func:`isolib.steps.memoized`, keyed by the
        embedding entry, the index, the options and this module's code) and reuse them: a rerun that changes only what is plotted does not read the layers again, and a
        stopped run resumes at the layer it was on.

    Returns
    -------
    per_layer : pandas.DataFrame
        One row per layer: ``model``, ``layer``, ``n_layers`` (hidden states of the model) and the
        :attr:`LayerStatistics.summary` entries.
    per_word : pandas.DataFrame
        One row per (layer, word): ``model``, ``layer``, ``word`` and the per-word columns.
    per_sentence : pandas.DataFrame
        One row per (layer, sentence): ``model``, ``layer``, ``sentence_id``, ``intra_similarity`` (raw).
    baselines : pandas.DataFrame
        One row per (layer, draw): ``model``, ``layer``, ``draw``, ``baseline_cosine``, ``mev_baseline``
        (:attr:`LayerStatistics.baselines`).
    """
    options = {"n_samples": n_samples, "max_occurrences": max_occurrences, "random_state": random_state}
    occurrences = index.occurrences
    identity = {"entry": embeddings.path.name, "first_position": embeddings.first_position,
                "words": occurrences.word.to_numpy(dtype=object), "sentence_id": occurrences.sentence_id.to_numpy(),
                "n_pieces": occurrences.n_pieces.to_numpy(), "kept": occurrences.kept.to_numpy(),
                "piece_rows": index.piece_rows, "unit": index.unit, "options": options}
    rows, words, sentences, baselines = [], [], [], []
    for layer in embeddings.layers:
        def compute(layer=layer) -> LayerStatistics:
            return layer_statistics(index, embeddings.layer(layer), **options)

        result = memoized("ethayarajh_layers", {**identity, "layer": layer}, compute, code=_CODE, store=resume)
        rows.append({"model": embeddings.model, "layer": layer, "n_layers": embeddings.n_layers, **result.summary})
        words.append(result.per_word.reset_index().assign(model=embeddings.model, layer=layer))
        sentences.append(result.per_sentence.reset_index().assign(model=embeddings.model, layer=layer))
        baselines.append(result.baselines.reset_index().assign(model=embeddings.model, layer=layer))
    per_word, per_sentence, baselines = (pd.concat(tables, ignore_index=True)
                                         for tables in (words, sentences, baselines))
    return (pd.DataFrame(rows), per_word[["model", "layer", *result.per_word.reset_index().columns]],
            per_sentence[["model", "layer", "sentence_id", "intra_similarity"]],
            baselines[["model", "layer", "draw", "baseline_cosine", "mev_baseline"]])


def anisotropy_by_layer(embeddings, *, n_samples: int = 1000, random_state: int = 0) -> pd.DataFrame:
    """The anisotropy baseline of every stored layer, over the non-special tokens (no word index needed).

    The quick look of notebook 00: :func:`isolib.metrics.anisotropy_baseline` (mean cosine between
    ``n_samples`` random tokens from different sentences) and the mean token norm, per layer.
    :func:`layer_statistics` computes the same baseline over the occurrences of its word index.

    Parameters
    ----------
    embeddings : isolib.embed.Embeddings
    n_samples : int
        Tokens drawn per layer; with the same ``random_state`` every layer draws the same tokens.
    random_state : int

    Returns
    -------
    pandas.DataFrame
        One row per layer: ``model``, ``layer``, ``average_cosine``, ``mean_norm``.
    """
    content = (~embeddings.tokens.is_special).to_numpy()
    sentence_ids = embeddings.tokens.sentence_id.to_numpy()[content]
    rows = []
    for layer in embeddings.layers:
        vectors = np.asarray(embeddings.layer(layer)[content], dtype=np.float64)
        rows.append({"model": embeddings.model, "layer": layer,
                     "average_cosine": anisotropy_baseline(vectors, sentence_ids, n_samples=n_samples,
                                                           random_state=random_state),
                     "mean_norm": float(np.linalg.norm(vectors, axis=1).mean())})
    return pd.DataFrame(rows)


def lowest_self_similarity(per_word: pd.DataFrame, *, n_words: int = 10) -> pd.DataFrame:
    """The ``n_words`` words of lowest self-similarity in every layer of every model.

    Adjusting for anisotropy subtracts one number per layer, so the raw and adjusted rankings agree.

    Parameters
    ----------
    per_word : pandas.DataFrame
        The ``per_word`` table of :func:`contextuality_by_layer` (several models may be concatenated).
    n_words : int

    Returns
    -------
    pandas.DataFrame
        ``model``, ``layer``, ``words`` (comma-separated, lowest first) and ``stopword_share``
        (fraction of them in :data:`STOPWORDS`, compared in lowercase).
    """
    rows = []
    for (model, layer), group in per_word.groupby(["model", "layer"], sort=False):
        lowest = group.nsmallest(n_words, "self_similarity").word
        rows.append({"model": model, "layer": layer, "words": ", ".join(lowest),
                     "stopword_share": float(lowest.str.lower().isin(STOPWORDS).mean())})
    return pd.DataFrame(rows)


def example_word_pairs(per_word: pd.DataFrame, wordnet: pd.DataFrame, supersenses: pd.DataFrame, *,
                       n_pairs: int = 5) -> list[tuple[str, str]]:
    """Pairs of a concrete noun and a polysemous verb of about as many contexts, for the slides' per-word MEV finding.

    Only types spelled in lowercase letters take part (a cased model's capitalised types are names or
    sentence starts). Nouns: types of three or more letters that WordNet lists only as nouns, every
    sense in a :data:`CONCRETE_SUPERSENSES` supersense (``guitar``, ``car``; not ``syria``, a location,
    nor ``percent``), not a stopword, not ending in ``s``, ``ed`` or ``ing`` (WordNet lists many
    inflected forms as nouns: ``talks``, ``led``, ``using``). Verbs: at least 10 WordNet verb senses and
    more verb senses than of any other part of speech (``run``: 41 against 16 as a noun; not ``open``, more
    often an adjective), neither a stopword nor a light verb
    (:data:`LIGHT_VERBS`). The ``n_pairs`` nouns in most contexts (ties by first appearance) are taken in
    that order, each paired with the verb not yet paired whose number of contexts is nearest its own
    (ties: the verb in more contexts), so that a pair's words are about as frequent.

    Parameters
    ----------
    per_word : pandas.DataFrame
        The ``per_word`` table of one model (``word``, ``n_contexts``; any number of layers).
    wordnet : pandas.DataFrame
        :func:`isolib.datasets.load_wordnet_pos` (``word``, ``pos``, ``n_senses``).
    supersenses : pandas.DataFrame
        :func:`isolib.datasets.load_wordnet_supersenses` (``word``, ``supersense``).
    n_pairs : int

    Returns
    -------
    list of (str, str)
        At most ``n_pairs`` pairs (fewer when the corpus has fewer such nouns or verbs).
    """
    contexts = per_word.groupby("word", sort=False).n_contexts.max().sort_values(ascending=False, kind="stable")
    contexts = contexts[contexts.index.str.fullmatch(r"[a-z]+")]
    senses = wordnet.pivot_table(index="word", columns="pos", values="n_senses", fill_value=0)
    senses = senses.reindex(columns=["noun", "verb", "adjective", "adverb"], fill_value=0)
    found = senses.reindex(contexts.index).fillna(0)
    concrete = supersenses.supersense.isin(CONCRETE_SUPERSENSES).groupby(supersenses.word).all()
    words = contexts.index
    nouns = words[(found.noun >= 1) & (found[["verb", "adjective", "adverb"]].sum(axis=1) == 0)
                  & concrete.reindex(words, fill_value=False) & (words.str.len() >= 3)
                  & ~words.str.endswith(("s", "ed", "ing")) & ~words.isin(STOPWORDS)]
    verbs = contexts[(found.verb >= 10) & (found.verb > found[["noun", "adjective", "adverb"]].max(axis=1))
                     & ~words.isin(STOPWORDS | LIGHT_VERBS)]
    pairs = []
    for noun in nouns[:n_pairs]:
        if verbs.empty:
            break
        verb = (verbs - contexts[noun]).abs().idxmin()  # the first of equals: the verb in more contexts
        pairs.append((noun, verb))
        verbs = verbs.drop(verb)
    return pairs


# --------------------------------------------------------------------------- one view's tables, stored


@dataclass(frozen=True)
class ViewTables:
    """Everything notebook 01 reads from one view of one model's embeddings: small tables.

    Attributes
    ----------
    label : str
        The :class:`~isolib.views.View` label of the model and view.
    entry : str
        Folder of the embedding cache entry the tables were computed from (``cache list``'s last column).
    is_decoder : bool
        Whether the model's position 0 is a word (then every view of it gets a first-position norm ratio).
    layers : tuple of int
        The stored layers.
    n_layers : int
        Hidden states of the model.
    n_tokens, n_occurrences, n_types, n_kept : int
        Token rows (special tokens not stored), non-punctuation occurrences, types in at least
        ``min_contexts`` sentences, and their occurrences.
    norm_ratio : pandas.Series, indexed by layer
        :func:`isolib.embed.first_position_norm_ratio`.
    per_layer, per_word, per_sentence, baselines : pandas.DataFrame
        :func:`contextuality_by_layer`'s tables, ``model`` set to ``label``; ``per_layer`` has the
        ``first_position_norm_ratio`` column too.
    table1 : pandas.DataFrame
        :func:`static_embedding_table`'s rows, ``model`` set to ``label``.
    """

    label: str
    entry: str
    is_decoder: bool
    layers: tuple[int, ...]
    n_layers: int
    n_tokens: int
    n_occurrences: int
    n_types: int
    n_kept: int
    norm_ratio: pd.Series
    per_layer: pd.DataFrame
    per_word: pd.DataFrame
    per_sentence: pd.DataFrame
    baselines: pd.DataFrame
    table1: pd.DataFrame


def _view_tables(model: str, sentences: Sequence[str], first_position: str, *, layers, dtype: str, device: str,
                 unit: str, min_contexts: int, n_samples: int, max_occurrences: int | None, random_state: int,
                 table1_layers: Sequence[int], static: WordVectors, static_name: str) -> ViewTables:
    embeddings = embed(model, sentences, layers=layers, dtype=dtype, device=device, keep_special=False,
                       first_position=first_position)
    label = View(embeddings.model, first_position).label
    index = occurrence_index(embeddings.tokens, unit=unit, min_contexts=min_contexts)
    norm_ratio = first_position_norm_ratio(embeddings)
    per_layer, per_word, per_sentence, baselines = contextuality_by_layer(
        embeddings, index, n_samples=n_samples, max_occurrences=max_occurrences, random_state=random_state,
        resume=True)
    per_layer["model"] = per_word["model"] = per_sentence["model"] = baselines["model"] = label
    per_layer["first_position_norm_ratio"] = norm_ratio.reindex(per_layer.layer).to_numpy()
    # Table 1's layers among those extracted (a layer not extracted for a model is left out), each once.
    wanted = dict.fromkeys(layer % embeddings.n_layers for layer in table1_layers)
    table1 = static_embedding_table(embeddings, index, [layer for layer in wanted if layer in embeddings.layers],
                                    static, static_name=static_name, max_occurrences=max_occurrences,
                                    random_state=random_state).assign(model=label)
    return ViewTables(label=label, entry=embeddings.path.name,
                      is_decoder=first_position != "keep" or embeddings.starts_with_content,
                      layers=embeddings.layers, n_layers=embeddings.n_layers, n_tokens=len(embeddings.tokens),
                      n_occurrences=len(index.occurrences), n_types=len(index.words),
                      n_kept=int(index.occurrences.kept.sum()), norm_ratio=norm_ratio, per_layer=per_layer,
                      per_word=per_word, per_sentence=per_sentence, baselines=baselines, table1=table1)


def contextuality_tables(model: str, sentences: Sequence[str], *, views: Sequence[str] = ("start_token",),
                         layers=None, dtype: str = "float16", device: str = "cpu", unit: str = "token",
                         min_contexts: int = 5, n_samples: int = 1000, max_occurrences: int | None = None,
                         random_state: int = 0, table1_layers: Sequence[int] = (1, -1), static: WordVectors,
                         static_name: str, keep_embeddings: bool = True) -> dict[str, ViewTables]:
    """Every table of notebook 01 that needs one model's embeddings, per view of its first position, stored.

    For each view (the paper's ``keep``, then ``views`` if the model is a decoder, as
    :func:`isolib.embed.embed_views`): extract or read the embeddings (special tokens not stored),
    index the occurrences (:func:`occurrence_index`), and compute the first-position norm ratio,
    :func:`contextuality_by_layer` and :func:`static_embedding_table`. Each view's tables are stored in
    the cache (:func:`isolib.steps.memoized`, keyed by the model's weights, the sentences, every option
    and the code of this module and of what it imports): a rerun that changes only what is plotted or
    judged does not open the embeddings, nor extract them if they were deleted.

    Parameters
    ----------
    model : str
        Offline short name or Hub id (:func:`isolib.embed.embed`).
    sentences : sequence of str
    views : sequence of {"start_token", "drop"}
        A decoder's other views of its first position.
    layers, dtype, device
        As in :func:`isolib.embed.embed`.
    unit, min_contexts
        As in :func:`occurrence_index`.
    n_samples, max_occurrences, random_state
        As in :func:`layer_statistics`.
    table1_layers : sequence of int
        Layers whose PC static vectors are scored (negative counts from the top; those not extracted
        are left out).
    static : WordVectors
        The static embedding of Table 1.
    static_name : str
        Its name in Table 1.
    keep_embeddings : bool
        False: delete each embedding entry (:func:`isolib.integrity.remove_entry`) once the tables of every
        view reading it are stored, so that at most one entry is on disk at a time and none is left;
        a rerun with changed analysis code extracts it again.

    Returns
    -------
    dict of str to ViewTables
        Keyed by the :class:`~isolib.views.View` label, the ``keep`` view first.
    """
    check_views(views)
    options = {"layers": layers, "dtype": dtype, "unit": unit, "min_contexts": min_contexts, "n_samples": n_samples,
               "max_occurrences": max_occurrences, "random_state": random_state,
               "table1_layers": list(table1_layers), "static_name": static_name}
    identity = {"model": model, "weights": fingerprint(model), "sentences": list(sentences), "static": static,
                **options}
    # "drop" reads the rows of the "keep" entry: it comes right after, before that entry is deleted.
    ordered = ["keep", *sorted(set(views), key=lambda view: view != "drop")]
    result = {}
    for position, first_position in enumerate(ordered):
        tables = memoized("ethayarajh_views", {**identity, "first_position": first_position},
                          functools.partial(_view_tables, model, sentences, first_position, device=device,
                                            static=static, **options),
                          code=_CODE)
        result[tables.label] = tables
        last = not tables.is_decoder  # an encoder: position 0 is [CLS], one view only
        if not keep_embeddings and (last or "drop" not in ordered[position + 1:]):
            _delete_entry(tables.entry)
        if last:
            break
    return result


def _delete_entry(folder: str) -> None:
    path = cache_root() / "embeddings" / folder
    if path.exists():
        remove_entry(path)


