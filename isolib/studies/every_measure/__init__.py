"""One embedding space, every measure: which isotropy measures agree, and what moves them (notebook 05).

The four studies of the collection each judge isotropy with their own measure (Ethayarajh the
average cosine of random tokens, Cai et al. S_inter and local intrinsic dimension, Rajaee &
Pilehvar the partition score I(W), Mickus et al. IsoScore), and on the same encoders they
disagree. Later work makes the disagreement the question: Rudman et al. (2022) argue that the
average cosine and I(W) do not measure isotropy; Timkey & van Schijndel (2021) show that one to
three "rogue" coordinates dominate cosine-based measures and that standardisation removes them.
This study puts every measure of :mod:`isolib.metrics` on the same points and sees which agree and
what moves each. Its parts:

* :mod:`~isolib.studies.every_measure.settings` -- the papers, the twelve measures and the thirteen
  changes, and the check of the notebook's parameters;
* :mod:`~isolib.studies.every_measure.sampling` -- which tokens: one fixed sample of word tokens per
  model, the same in every view and layer;
* :mod:`~isolib.studies.every_measure.compute` -- every measure of each (model, view, layer) cell and
  token sample and of every change of each, the rogue shares: the evidence;
* :mod:`~isolib.studies.every_measure.tables` -- what is read off the evidence: one isotropy scale,
  the agreement of the measures (Kendall's tau) and what moves each, with their intervals;
* :mod:`~isolib.studies.every_measure.claims` -- the claims of Rudman et al. (2022) and Timkey & van
  Schijndel (2021) as tests with their controls, and the checks, judged from the evidence alone;
* :mod:`~isolib.studies.every_measure.guide` -- the reader's answer (which measure for which
  question), generated from the tables;
* :mod:`~isolib.studies.every_measure.figures` -- the notebook's larger figures.
"""
