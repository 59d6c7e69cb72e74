"""What a row of a study is about: a model seen one way (:class:`View`), with one label.

A decoder's first position is an attention sink, so the studies look at it in several *views* of that
position (kept as the paper did, behind a start token, dropped), and some look at the encoders with the
punctuation tokens kept beside the word tokens. A :class:`View` holds those choices as fields; its
:attr:`~View.label` is the one way a view is written in tables and pages, and :meth:`View.parse` the one
way a label is read back. Nothing here loads a model.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FIRST_POSITIONS", "View"]

# How a view treats the first position, and how its label says so.
FIRST_POSITIONS = {"keep": "", "start_token": " (start token)", "drop": " (position 0 dropped)"}
_SYMBOLS_KEPT = " (symbols kept)"


@dataclass(frozen=True, order=True)
class View:
    """A model, how its first position is treated, and whether punctuation tokens are kept.

    Attributes
    ----------
    model : str
        The model's name (an offline name or a Hub id).
    first_position : {"keep", "start_token", "drop"}
        ``keep``: as the paper fed the model; ``start_token``: behind a start token that absorbs the
        attention sink; ``drop``: position 0 left out.
    symbols_kept : bool
        Punctuation and symbol tokens counted beside the word tokens.

    Examples
    --------
    >>> View("smollm2", "start_token").label
    'smollm2 (start token)'
    >>> View.parse("minilm (symbols kept)")
    View(model='minilm', first_position='keep', symbols_kept=True)
    """

    model: str
    first_position: str = "keep"
    symbols_kept: bool = False

    def __post_init__(self):
        if self.first_position not in FIRST_POSITIONS:
            raise ValueError(f"first_position must be one of {sorted(FIRST_POSITIONS)}, got {self.first_position!r}.")

    @property
    def label(self) -> str:
        """The view as tables and pages write it: ``smollm2 (start token)``, ``minilm (symbols kept)``."""
        return self.model + FIRST_POSITIONS[self.first_position] + (_SYMBOLS_KEPT if self.symbols_kept else "")

    def __str__(self) -> str:
        return self.label

    @classmethod
    def parse(cls, label: str) -> View:
        """The view a :attr:`label` names."""
        model, symbols_kept = (label.removesuffix(_SYMBOLS_KEPT), True) if label.endswith(_SYMBOLS_KEPT) else (
            label, False)
        for first_position, suffix in FIRST_POSITIONS.items():
            if suffix and model.endswith(suffix):
                return cls(model.removesuffix(suffix), first_position, symbols_kept)
        return cls(model, "keep", symbols_kept)
