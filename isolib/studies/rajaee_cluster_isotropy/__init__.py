"""Rajaee & Pilehvar (2021), *A cluster-based approach for improving isotropy in contextual embedding space*: notebook 03.

The method: cluster the token vectors of an evaluation set, subtract each cluster's mean, and remove
each cluster's dominant principal directions; sentence vectors (the mean of a sentence's processed
tokens) should then score better on semantic textual similarity. The slides' comparison table, their
per-layer isotropy, the SST-2 probe and the fine-tuning of an encoder with the method on each batch's
[CLS] vectors are rebuilt in four parts:

* :mod:`~isolib.studies.rajaee_cluster_isotropy.settings` -- the citation, the slides' values, the method's
  settings and the parameter check;
* :mod:`~isolib.studies.rajaee_cluster_isotropy.compute` -- the six processing rows, the grid, the per-layer
  isotropy and the probe, and the evidence tables they give; with
  :mod:`~isolib.studies.rajaee_cluster_isotropy.finetuning` (the fine-tuning runs), the only code that
  keys stored steps;
* :mod:`~isolib.studies.rajaee_cluster_isotropy.claims` -- each claim judged from the evidence tables alone
  (``record(evidence)``);
* :mod:`~isolib.studies.rajaee_cluster_isotropy.figures` -- the longer figures of the notebook.
"""
