"""Mickus et al. (2024), *Isotropy, Clusters, and Classifiers*: the study of notebook 04.

The paper argues that isotropy (IsoScore) and clusters (silhouette) are antithetical, and that a linear
classifier pulls the points it classifies into clusters: optimising embeddings for a linear classifier
(:func:`isolib.probe.train_probe`, in the library) should lower IsoScore and raise the silhouette.

Parts
-----
:mod:`~isolib.studies.mickus_isotropy_clusters.settings`
    The citation, the paper's Tables 1 and 2, the setups' names, and the notebook's parameter check.
:mod:`~isolib.studies.mickus_isotropy_clusters.compute`
    The evidence: the paper's setups and their counts, the probe's traces per setup, seed and update,
    the controls (shuffled labels, a label-free objective), the per-seed correlations, Section 2's
    demonstration and Appendix A's plan.
:mod:`~isolib.studies.mickus_isotropy_clusters.claims`
    Each claim judged from the evidence tables alone (:func:`~.claims.record`): effect sizes towards
    each metric's bound and monotonicity, each beside its control judged by the same rule, the spread over
    seeds; the counts of Tables 1 and 2 as checks; the stand-ins marked.
:mod:`~isolib.studies.mickus_isotropy_clusters.figures`
    Figures 2 to 4 and the controls' figure.
"""
