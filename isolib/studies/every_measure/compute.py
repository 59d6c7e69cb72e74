"""Everything notebook 05 measures: the twelve measures of one set of points, the changes, the rogue shares.

What this module returns is the study's *evidence* (stored by the notebook, judged by
:mod:`~isolib.studies.every_measure.claims`, which never imports this module). The measurement itself is
the library's, shared with the model card (:mod:`isolib.measuring`, imported here):

* :mod:`~isolib.studies.every_measure.sampling` -- which tokens (one fixed sample of word tokens of one
  corpus per model, the same in every view and layer of a model, and the static vectors of the same
  running text's words);
* :class:`Spectrum` and :func:`every_measure` -- the twelve measures of one set of points, those that
  share a covariance or scatter matrix computing it once (:data:`~isolib.studies.every_measure.settings.MEASURES`);
* :func:`changed_samples` -- controlled changes of the same points (centring, ABTT, the cluster-based
  method, whitening, standardisation, rogue dimensions removed, a rotation, unit length, the decoder's
  first position removed, uniform scaling, a planted outlier, fewer points);
* :func:`measure_spaces` -- every measure of every (model, view, layer) cell and token sample, and of
  every change of each sample: the tables ``measures_by_replicate`` and ``changed``;
* :func:`rogue_shares` -- how much of the average cosine the top coordinates carry, against a random
  rotation of the same points, with the share of each bootstrap resample of the windows (the only
  interval whose unit, the windows, is not kept in the tables: its resamples are);
* :func:`library_agreement` -- the shared decomposition against :mod:`isolib.metrics` (a check).
"""

from __future__ import annotations

import math

import numpy as np

from isolib.measuring import (
    ChangeSettings,
    MeasureOptions,
    Spectrum,
    changed_samples,
    cosine_contributions,
    every_measure,
    measure_spaces,
    rogue_shares,
)
from isolib.metrics import effective_rank, explained_variance, isoscore, partition_isotropy
from isolib.studies.every_measure.sampling import Sample

__all__ = [
    "MeasureOptions",
    "Spectrum",
    "cosine_contributions",
    "every_measure",
    "library_agreement",
    "ChangeSettings",
    "changed_samples",
    "measure_spaces",
    "rogue_shares",
]


def library_agreement(sample: Sample) -> float:
    """Largest difference between the shared-spectrum measures and :mod:`isolib.metrics` computing each alone.

    IsoScore, the effective rank, the top principal direction's share and I(W) (compared on
    ``log10``; where I(W) underflows in the library, not at all). A check that sharing the
    decomposition changes nothing.
    """
    points = np.asarray(sample.points, dtype=np.float64)
    spectrum = Spectrum.of(points)
    differences = [abs(spectrum.isoscore() - isoscore(points)),
                   abs(spectrum.effective_rank() - effective_rank(points, centered=True) / points.shape[1]),
                   abs(spectrum.top_direction_share() - explained_variance(points)[0])]
    iw = partition_isotropy(points)
    if iw > 1e-300:
        differences.append(abs(spectrum.log10_partition_isotropy(points) - math.log10(iw)))
    return float(max(differences))
