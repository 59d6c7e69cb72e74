"""isolib: the library behind the isotropy notebooks.

Modules
-------
datasets    dataset registry, verification, fetching and loaders
models      offline and Hub models; the one place that defines layer indexing
embed       per-layer token embeddings with a content-addressed cache
metrics     measures, one module per family: cosine, variance, isotropy, neighbours (LID),
            clustering; every public name importable from ``isolib.metrics``
transforms  centring, all-but-the-top, cluster-based isotropy enhancement
evaluation  STS, word similarity, analogy and categorization benchmarks
probe       the embedding-optimisation probe of Mickus et al.
plotting    shared figure helpers
findings    the papers' findings beside ours: rules, statuses, RESULTS.md, figures/README.md
runner      Papermill runner behind ``python -m isolib reproduce``
studies     one module per study notebook (``notebooks/01_ethayarajh_contextuality.py`` uses
            ``isolib.studies.ethayarajh_contextuality``); the library above never imports it
"""

__version__ = "0.1.0"
