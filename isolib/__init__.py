"""isolib: the library behind the isotropy notebooks.

Modules
-------
datasets    dataset registry, verification, fetching and loaders
models      offline and Hub models; the one place that defines layer indexing
embed       per-layer token embeddings with a content-addressed cache
metrics     isotropy, cosine, variance, intrinsic-dimension and cluster measures
transforms  centring, all-but-the-top, cluster-based isotropy enhancement
evaluation  STS, word similarity, analogy and categorization benchmarks
probe       the embedding-optimisation probe of Mickus et al.
plotting    shared figure helpers
runner      Papermill runner behind ``python -m isolib reproduce``
"""

__version__ = "0.1.0"
