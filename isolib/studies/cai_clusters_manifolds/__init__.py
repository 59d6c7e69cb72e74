"""Cai, Huang, Bian & Church (ICLR 2021), *Isotropy in the contextual embedding space: clusters and manifolds*.

The study asks whether the anisotropy of contextual embeddings is global or an effect of a few
isolated clusters, and how many dimensions the space uses locally. Its parts:

* :mod:`~isolib.studies.cai_clusters_manifolds.settings` -- the citation, the paper's models and Table 3,
  the parameters' check;
* :mod:`~isolib.studies.cai_clusters_manifolds.compute` -- the analysed tokens (:func:`~.compute.token_types`),
  every layer's measures (:func:`~.compute.geometry_by_layer`, one layer by
  :func:`~.measures.layer_geometry`: S_inter, S_intra, k-means chosen by silhouette, S_inter / S_intra
  inside the clusters after per-cluster centring, LID in four variants), LID against the number of
  points (:func:`~.compute.lid_against_n`) and what the pictures show; the evidence;
* :mod:`~isolib.studies.cai_clusters_manifolds.claims` -- the paper's claims judged from the evidence
  tables alone (``record(evidence)``);
* :mod:`~isolib.studies.cai_clusters_manifolds.figures` -- the notebook's long figures.

Layer indexing
--------------
Ours (the whole project): layer 0 is the input embedding layer, layer L the output of block L. The
authors' code analysed ``hidden_states[1:]``, so **their layer L is our layer L + 1** and our layer 0
has no paper name (:func:`~.compute.paper_layer`, :func:`~.compute.layer_name`).

Windows (:func:`isolib.windows.running_text_windows`)
----------------------------------------------------
Each line of the split is tokenised on its own and the pieces are concatenated into one stream (the
authors' procedure; the text of the stream is the lines joined by single spaces). The stream is cut
into consecutive, non-overlapping windows of ``window_length`` tokens *including* the model's own
special tokens ([CLS] and [SEP] for a BERT, none for a decoder), each window ending at a word
boundary (a word is never split between two windows). The short last window is dropped, as in the
authors' code. A window is fed to the model as its text, so a byte-level BPE tokenizer reads a
line's first word with a leading space (inside a window) or the window's first word without one; a
window that re-tokenizes longer than ``window_length`` loses words at its end until it fits.

One departure from the authors' code, about tokens the statistics exclude by default: their BERT
saw [CLS] ... [SEP] around every line, in mid-window; here a window has one [CLS] at its start and
one [SEP] at its end. PTB's ``<unk>`` is read as each tokenizer reads it, as theirs did (MiniLM:
``<``, ``un``, ``##k``, ``>``; MPNet: its own ``<unk>`` token).

Analysed tokens (:func:`~.compute.token_types`)
-----------------------------------------------
A token's *type* is its piece without the space marker of byte-level BPE (:func:`isolib.embed.unit_text`).
A **symbol token** is a piece with no letter and no digit (:func:`isolib.embed.is_punctuation`:
``.``, ``,``, ``$``, ``%``, ``<``); every other non-special piece is a **word token**. By default
statistics exclude special tokens and symbol tokens; ``keep_symbols=True`` keeps both, as the
authors' code did (it counted every token as a type). The pieces of PTB's placeholders ``<unk>`` (a
rare word) and ``N`` (a number) are not language: by default they are left out too
(:func:`isolib.windows.placeholder_mask`; ``keep_placeholders=True`` keeps them, as the authors' code did), and
the count left out is reported. A decoder's first window position, the attention sink, is kept in
the ``keep`` view (the authors' protocol) and absorbed by a start token in the ``start_token`` view,
the one judged (:mod:`isolib.embed`, "The first position"; :func:`isolib.findings.judge_decoder_views`).
An encoder can also be analysed with its special and symbol tokens kept, beside its main view
(:class:`isolib.views.View` with ``symbols_kept``).

Clusters and outlier groups (:func:`~isolib.metrics.select_kmeans`, :func:`~.measures.describe_clusters`)
--------------------------------------------------------------------------------------------------------
K-means runs ``n_init`` times per k, every run scored by silhouette, so the chosen k comes with
its spread over restarts. A chosen cluster below ``min_cluster_share`` of the tokens, or made mostly
of window-first tokens or placeholder pieces, is an *outlier group*; the claims also set apart a
cluster made mostly of one token type or whose median norm is more than twice or less than half the
layer's (:func:`isolib.findings.artefact_reason`): together, *artefact groups*
(:func:`~.claims.artefact_groups`). The space is "dominated by clusters" only where at least two
clusters are not artefact groups, and only where the same selection on a Gaussian of each layer's
mean and covariance (:func:`~.measures.gaussian_control`: the same spread, no clusters) does not
find clusters too.

The paper's core comparison (:func:`~.measures.centring_units`)
---------------------------------------------------------------
Per-cluster centring is compared with its control, global centring, on the same units: one random
instance per type, the same tokens in every layer of a model, each compared with the other types
(of its cluster, or of the whole layer) after centring.

Evidence
--------
The claims read six tables and three items, all stored by the notebook (:func:`isolib.evidence.save_evidence`):
``per_layer`` (every per-layer number, per model view and corpus, with the clusters' control: the same
selection on a Gaussian of the layer's mean and covariance, :func:`~.measures.gaussian_control`),
``silhouettes`` (every k and k-means restart of every layer), ``clusters`` (every chosen cluster's size,
norms against the rest and most frequent type: what tells a cluster from an artefact group), ``units``
(per type and layer, its S_inter after per-cluster and after global
centring: what the centring claims resample), ``table3`` and ``lid_curve`` (LID per number of points,
contextual and static); ``swiss_roll`` and ``symbols`` (what the pictures show, per view) and ``run``
(the parameters, wall time and memory of the run, for the page's notes).
"""
