"""isolib: the library behind the isotropy notebooks.

Modules
-------
datasets     dataset registry, verification, fetching and loaders
models       offline and Hub models; the one place that defines layer indexing
embed        per-layer token embeddings with a content-addressed cache; views    a model seen one way (View)
integrity    the cache's manifests, damaged entries set aside, a full disk named; cache    its listing and pruning
steps        long deterministic steps stored and reused (memoized), keyed by computation (computation)
metrics      measures, one module per family: cosine, variance, isotropy, neighbours (LID), clustering;
             every public name importable from ``isolib.metrics``
transforms   centring, all-but-the-top, cluster-based isotropy enhancement
evaluation   STS, word similarity, analogy and categorization benchmarks
probe        the embedding-optimisation probe of Mickus et al.
evidence     a study's evidence stored as tables and judged again (``python -m isolib judge``)
findings     rules, intervals, the record (results.json), reference numbers, RESULTS.md and figures/README.md
plotting     shared figure helpers; markdown    tables as Markdown
project      where things are; parameters, checks    a notebook's parameters and their one-sentence checks
runner       Papermill execution behind ``python -m isolib reproduce``; comparison    check-figures;
             student    copies for nbgrader; scaffold    ``python -m isolib new-study``
studies      one package per study notebook (``notebooks/01_ethayarajh_contextuality.py`` uses
             ``isolib.studies.ethayarajh_contextuality``): settings, compute, claims, figures; the library
             above never imports one
"""

__version__ = "0.1.0"
