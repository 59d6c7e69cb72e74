"""The evidence of notebook <<NN>>: the average cosine of random tokens per model, layer and token sample.

Only this module's code (and the library code it imports) keys stored steps (:func:`isolib.steps.memoized`):
editing the claims, the settings, a figure or a docstring never recomputes them.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from isolib.embed import Embeddings
from isolib.metrics import average_cosine
from isolib.steps import memoized

EVIDENCE_COLUMNS = ["model", "layer", "sample", "average_cosine", "control_cosine"]


def cosine_samples(embeddings: Embeddings, *, n_samples: int, n_tokens: int, random_state: int = 0) -> pd.DataFrame:
    """The average cosine of ``n_tokens`` random content tokens, ``n_samples`` times per layer, stored as computed.

    Beside each sample, the control: the same measure on as many points of an isotropic Gaussian cloud of
    the layer's dimension, which a claim of anisotropy must tell apart from the model's tokens.

    Returns
    -------
    pandas.DataFrame
        One row per layer and sample: :data:`EVIDENCE_COLUMNS`.
    """
    inputs = {"entry": embeddings.path.name, "n_samples": n_samples, "n_tokens": n_tokens, "seed": random_state}

    def compute():
        generator = np.random.default_rng(random_state)
        content = np.flatnonzero(~embeddings.tokens.is_special.to_numpy())
        rows = []
        for layer in embeddings.layers:
            vectors = np.asarray(embeddings.layer(layer), dtype=np.float64)
            for sample in range(n_samples):
                chosen = vectors[generator.choice(content, size=min(n_tokens, len(content)), replace=False)]
                control = generator.standard_normal(chosen.shape)
                rows.append([embeddings.model, layer, sample, average_cosine(chosen), average_cosine(control)])
        return pd.DataFrame(rows, columns=EVIDENCE_COLUMNS)

    return memoized("<<NAME>>_cosines", inputs, compute, code=(sys.modules[__name__],))
