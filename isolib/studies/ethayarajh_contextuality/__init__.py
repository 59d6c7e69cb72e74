"""Ethayarajh (2019), *How contextual are contextualized word representations?*, for notebook 01.

The study asks how much of a word's representation is fixed by the word and how much by its context.
Its parts, by what changes for different reasons:

* :mod:`~isolib.studies.ethayarajh_contextuality.settings` -- the citation, the paper's models and
  reference numbers, the offline models that stand in for them, and the parameters' check;
* :mod:`~isolib.studies.ethayarajh_contextuality.compute` -- the evidence: per layer of every model view,
  SelfSim and MEV per word type, IntraSim per sentence and the anisotropy baselines, stored in the cache;
  with :mod:`~isolib.studies.ethayarajh_contextuality.occurrences` (which rows are occurrences of which
  word type: the rules) and :mod:`~isolib.studies.ethayarajh_contextuality.static_vectors` (the PC static
  vectors and word benchmarks of the paper's Table 1);
* :mod:`~isolib.studies.ethayarajh_contextuality.claims` -- each claim of the paper, judged from the
  evidence tables alone (``record(evidence)``);
* :mod:`~isolib.studies.ethayarajh_contextuality.figures` -- the figures whose code is long.
"""
