"""<<TITLE>>: the study of notebook <<NN>>_<<NAME>>.

Parts
-----
:mod:`~isolib.studies.<<NAME>>.settings`
    The citation, the paper's values, and the notebook's parameter check.
:mod:`~isolib.studies.<<NAME>>.compute`
    The evidence: the average cosine of random tokens per model, layer and token sample, and of an isotropic
    control cloud of the same shape.
:mod:`~isolib.studies.<<NAME>>.claims`
    Each claim judged from the evidence alone (:func:`~.claims.record`).
"""
