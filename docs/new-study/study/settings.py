"""Settings of notebook <<NN>>: the citation, the paper's values, and the parameter check.

Nothing here computes: edit it freely, no stored step depends on it.
"""

from __future__ import annotations

from isolib.checks import check_integers, check_models

CITATION = "Author and Author (Year), *Title*, Venue"
TITLE = "<<TITLE>>: results of this run"
# The paper's value of each claim, as it reports it.
PAPER_ANISOTROPY = "the average cosine is well above 0 in every layer but the input"


def check_parameters(params: dict) -> None:
    """Refuse, in one sentence, parameters of notebook <<NN>> its run would fail on (called before any kernel starts)."""
    check_models(params, "models")
    check_integers(params, ["n_sentences", "random_state"])
    check_integers(params, ["n_samples"], minimum=2)  # an interval needs two samples at least
    check_integers(params, ["n_tokens"], minimum=2)  # a cosine needs two tokens
