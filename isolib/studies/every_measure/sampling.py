"""Which tokens notebook 05 measures: :mod:`isolib.sampling`, shared with the model card (:mod:`isolib.card`).

One fixed sample of word tokens per model, the same in every view and layer: :func:`analysed_tokens`,
:func:`draw_token_samples`, :func:`static_sample`, :class:`Sample` and :func:`token_samples`.
"""

from isolib.sampling import Sample, analysed_tokens, draw_token_samples, static_sample, token_samples

__all__ = ["analysed_tokens", "draw_token_samples", "static_sample", "Sample", "token_samples"]
