"""A paper's per-layer reference numbers beside this run's, and the models line of a results page.

:func:`compare_reference` sets a paper's per-layer numbers beside the same layer of the paper's own
model, or beside the layer at the same relative depth of a stand-in model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from isolib.findings.record import Finding, declare, not_comparable
from isolib.findings.rules import Verdict, within
from isolib.models import OFFLINE_MODELS
from isolib.views import View

__all__ = ["ENCODER_TRAINING_LENGTH", "PaperModel", "STAND_IN_REASONS", "paper_counterpart", "models_line",
           "compare_reference"]

ENCODER_TRAINING_LENGTH = 128  # the longest input the sentence encoders were trained on, in tokens
_SENTENCE_ENCODER = ("a sentence encoder trained contrastively to spread sentences apart for similarity search, so it "
                     "is expected to be nearly isotropic and to lose from removing its principal directions; it was "
                     f"trained on sentences and short paragraphs of at most {ENCODER_TRAINING_LENGTH} tokens (its "
                     "library cuts inputs at {length})")
# Why each offline model may behave differently from the paper's model it stands in for: said once on every page.
STAND_IN_REASONS = {
    "minilm": _SENTENCE_ENCODER.format(length=256),
    "mpnet": _SENTENCE_ENCODER.format(length=384),
    "smollm2": ("an instruction-tuned decoder run from a 4-bit (Q4_1) quantised copy, where GPT-2 is pretrained only "
                "and full precision; like other decoders its first position is an attention sink"),
    "glove-50d": ("50-dimensional GloVe (6B tokens), a weaker static baseline than the papers' 300-dimensional "
                  "GloVe and FastText vectors"),
}


@dataclass(frozen=True)
class PaperModel:
    """A model the paper reports numbers for.

    Attributes
    ----------
    name : str
        Its Hugging Face Hub id (or a plain name for models outside transformers, e.g. ``elmo``).
    label : str
        As the paper names it (``BERT``).
    n_layers : int
        Hidden states including the input layer (13 for a 12-block model), in our indexing:
        layer 0 is the input embedding layer.
    """

    name: str
    label: str
    n_layers: int


def paper_counterpart(model: str, paper_names, stand_ins: dict[str, str]) -> str | None:
    """The paper model that ``model`` (or a view of it, e.g. ``smollm2 (position 0 dropped)``) is compared with.

    Itself when it is one of ``paper_names`` (the paper ran it), else its entry in ``stand_ins``
    (an offline model standing in for a paper model), else None.
    """
    name = View.parse(model).model
    return name if name in paper_names else stand_ins.get(name)


def models_line(models: Sequence[str], paper_models: Sequence[PaperModel] = (),
                counterpart: Callable[[str], str | None] | None = None) -> str:
    """Each model run, what exactly it is, and the paper model it stands in for (the ``Models`` line of ``RESULTS.md``).

    An offline model is named by its checkpoint, with how it was trained or stored where that
    matters to a reader (``smollm2 (SmolLM2-135M-Instruct, the instruction-tuned model, from a Q4_1
    GGUF dequantised to float32; for GPT-2)``); a view of a model (``smollm2 (start token)``) is named
    once, by its model. Without ``counterpart`` (a study that stands in for no paper model) no
    "for ..." is added.
    """

    labels = {paper.name: paper.label for paper in paper_models}
    described = []
    for name in dict.fromkeys(View.parse(model).model for model in models):
        offline = OFFLINE_MODELS.get(name)
        parts = [offline.checkpoint.rsplit("/", 1)[-1] + (f", {offline.provenance}" if offline.provenance else "")
                 ] if offline else []
        if counterpart is not None and counterpart(name) not in (name, None):
            parts.append(f"for {labels[counterpart(name)]}")
        described.append(f"{name} ({'; '.join(parts)})" if parts else name)
    return ", ".join(described)


def compare_reference(per_layer: pd.DataFrame, reference: dict, paper_models: Sequence[PaperModel],
                      counterpart: Callable[[str], str | None], measure_names: dict[str, str], *,
                      tolerance: float) -> list[Finding]:
    """A paper's per-layer numbers beside ours: same layer on its own model, same relative depth on a stand-in.

    A number is judged (:func:`within` ``tolerance``) only on the paper's own model; on a model
    that stands in for it, the stored layers at the same relative depth (layer / last layer) are
    shown as "not comparable"; with no such model run, one "not comparable" row says so.

    Parameters
    ----------
    per_layer : pandas.DataFrame
        One row per (model, layer): ``model``, ``layer``, ``n_layers`` (hidden states of the model)
        and one column per measure.
    reference : dict
        ``{paper model name: {measure: {layer or (low, high): value or (low, high)}}}``, layers in
        our indexing; a value given over several layers is keyed by ``(low, high)``.
    paper_models : sequence of PaperModel
        Every paper model named in ``reference``.
    counterpart : callable
        Maps one of our model names to the paper model it is compared with (itself, the model it
        stands in for, or None).
    measure_names : dict of str to str
        How each measure reads in the finding's text.
    tolerance : float
        Largest absolute difference that counts as reproduced.

    Returns
    -------
    list of Finding
    """
    findings = []
    models = list(pd.unique(per_layer.model))
    for paper_model in paper_models:
        paper_last = paper_model.n_layers - 1
        compared = [model for model in models if counterpart(model) == paper_model.name]
        for measure, values in reference.get(paper_model.name, {}).items():
            for layers, paper_value in values.items():
                low, high = layers if isinstance(layers, tuple) else (layers, layers)
                expected = (f"{paper_value[0]:.2f}-{paper_value[1]:.2f}" if isinstance(paper_value, tuple)
                            else f"{paper_value:.3f}")
                label = f"L{low}" if low == high else f"L{low}-{high}"
                claim = f"{measure_names[measure]}, {paper_model.label} {label}"
                if not compared:
                    findings.append(not_comparable(claim, expected, f"{paper_model.label} is not run in this profile.",
                                                   kind="test"))
                for model in compared:
                    table = per_layer[per_layer.model == model].set_index("layer")
                    last = int(table.n_layers.iloc[0]) - 1
                    if model == paper_model.name:
                        chosen = table.loc[low:high]
                    else:  # the stored layers at the same relative depth
                        depth = table.index.to_numpy() / last
                        near = [table.index[np.argmin(np.abs(depth - layer / paper_last))] for layer in (low, high)]
                        chosen = table.loc[near[0]:near[1]]
                    ours_values = chosen[measure]
                    if chosen.empty:  # the paper's layers are not among those stored
                        ours = "-"
                    elif len(chosen) == 1:
                        ours = f"{ours_values.iloc[0]:.3f} (L{chosen.index[0]})"
                    else:
                        ours = f"{ours_values.min():.2f}-{ours_values.max():.2f} (L{chosen.index[0]}-{chosen.index[-1]})"
                    if model != paper_model.name:
                        findings.append(not_comparable(
                            claim, expected, f"{model} stands in for {paper_model.label}; shown at the same relative depth.",
                            kind="test", model=model, ours=ours))
                        continue
                    verdict = within(ours_values.to_numpy(), paper_value, tolerance) if len(chosen) else Verdict.undecided()
                    findings.append(declare(claim, expected, model, ours, verdict,
                                            f"reproduced if within {tolerance} of the paper's value.", kind="test",
                                            control=f"the paper's value, {tolerance} either side"))
    return findings


