"""Isotropy, cosine, variance, intrinsic-dimension and cluster measures.

Every function takes points as rows of an array of shape ``(n_samples, n_features)``
(float32 input stays float32 in memory; all sums are accumulated in float64), takes
an explicit ``random_state`` (None, int or ``numpy.random.Generator``) wherever it
samples, and works in row chunks or distance blocks so that memory stays bounded.

Each family lives in its own submodule; every public name is re-exported here, so
``from isolib.metrics import lid_mle`` is the way to import it.

===================  ==============  =========================================  ==========================
Family               Module          Functions                                  Source
===================  ==============  =========================================  ==========================
cosine               ``cosine``      :func:`average_cosine`,                    Ethayarajh (2019)
                                     :func:`self_similarity`,
                                     :func:`intra_similarity`,
                                     :func:`anisotropy_baseline`
cosine (types)       ``cosine``      :func:`s_inter`, :func:`s_intra`           Cai et al. (2021)
variance             ``variance``    :func:`mev`, :func:`mev_baseline`,         Ethayarajh (2019);
                                     :func:`explained_variance`,                Roy & Vetterli (2007)
                                     :func:`effective_rank`
isotropy             ``isotropy``    :func:`isoscore`,                          Rudman et al. (2022)
                                     :func:`principal_variances`
                                     :func:`partition_isotropy`                 Mu & Viswanath (2018)
intrinsic dimension  ``neighbours``  :func:`lid_mle`                            Levina & Bickel (2005),
                                                                                as used by Cai et al.
clusters             ``clustering``  :func:`silhouette`, :func:`silhouettes`,   Rousseeuw (1987);
                                     :func:`select_kmeans`,                     Cai et al. (2021)
                                     :func:`centre_per_cluster`
===================  ==============  =========================================  ==========================

Helpers shared by several families are in ``_common``, among them
:func:`random_subset_per_group`, which keeps at most a given number of random rows
per group (the instance cap of :func:`s_inter` and :func:`s_intra`).

Degenerate input follows two rules:

* a **scalar** measure that is undefined for its input raises ``ValueError`` with one
  sentence (identical points for IsoScore, one cluster for the silhouette, no valid
  pair for a mean cosine, an all-zero matrix for MEV and for ``I(W)``);
* a **per-group** measure (a ``pandas.Series`` indexed by word or sentence) holds NaN
  for the groups where it is undefined (a word seen once, a sentence whose mean
  vector is zero), so one such group never hides the others.

Cosine measures reject zero vectors (their cosine is undefined) with ``ValueError``.
Every measure rejects a scipy sparse matrix with ``ValueError`` (pass ``X.toarray()``), and complex
numbers (numpy would drop their imaginary part with only a warning).
"""

from isolib.metrics._common import random_subset_per_group
from isolib.metrics.clustering import KMeansSelection, centre_per_cluster, select_kmeans, silhouette, silhouettes
from isolib.metrics.cosine import (
    anisotropy_baseline,
    average_cosine,
    intra_similarity,
    s_inter,
    s_intra,
    self_similarity,
)
from isolib.metrics.isotropy import isoscore, partition_isotropy, principal_variances
from isolib.metrics.neighbours import lid_mle
from isolib.metrics.variance import effective_rank, explained_variance, mev, mev_baseline

__all__ = [
    "average_cosine",
    "self_similarity",
    "intra_similarity",
    "anisotropy_baseline",
    "s_inter",
    "s_intra",
    "mev",
    "mev_baseline",
    "explained_variance",
    "effective_rank",
    "isoscore",
    "principal_variances",
    "partition_isotropy",
    "lid_mle",
    "silhouette",
    "silhouettes",
    "KMeansSelection",
    "select_kmeans",
    "centre_per_cluster",
    "random_subset_per_group",
]
