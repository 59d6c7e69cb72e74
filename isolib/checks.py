"""One-sentence checks of parameter values, shared by the runner and every study's ``settings.check_parameters``.

Each raises ValueError naming the parameter and what it must hold; none imports a study or the runner, so a
study's settings can use them without an import circle.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

__all__ = ["check_bounded", "check_integers", "check_choices", "check_extraction", "check_layers", "check_models"]

# What a parameter's value may hold, whatever its notebook: sizes, counts and seeds fit 32 bits (scikit-learn's
# seeds end at 2**32 - 1, numpy's sizes overflow past 2**63), and no value nests deeper than a few lists or mappings.
LARGEST_INTEGER = 2**31 - 1
DEEPEST_NESTING = 8


def check_bounded(name: str, value, *, depth: int = 0) -> None:
    """Refuse (one sentence) a parameter ``name`` whose ``value`` holds, at any depth, a number that is not finite,
    an integer beyond :data:`LARGEST_INTEGER`, a mapping whose keys are not all of one type (strings or numbers),
    or lists and mappings nested deeper than :data:`DEEPEST_NESTING`."""
    if isinstance(value, (list, dict)):
        if depth == DEEPEST_NESTING:
            raise ValueError(f"{name} nests lists or mappings deeper than {DEEPEST_NESTING} levels.")
        if isinstance(value, dict):
            kinds = {type(key) for key in value}
            if len(kinds) > 1 or not kinds <= {str, int, float, bool}:
                raise ValueError(f"{name} must have mapping keys of one type, all strings or all numbers; got keys "
                                 f"of type {', '.join(sorted(kind.__name__ for kind in kinds))}.")
        for item in [*value, *value.values()] if isinstance(value, dict) else value:
            check_bounded(name, item, depth=depth + 1)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number; got {value!r}." if depth == 0 else
                         f"{name} must hold finite numbers; got {value!r}.")
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > LARGEST_INTEGER:
        raise ValueError(f"{name} must hold integers between -{LARGEST_INTEGER:,} and {LARGEST_INTEGER:,} (sizes, "
                         f"counts and seeds); got {value}.")


def check_integers(params: dict, names, *, minimum: int | None = 0) -> None:
    """Refuse (one sentence) a parameter in ``names`` (a value or a list) holding other than integers >= ``minimum``.

    For the studies' ``check_parameters``: sizes, counts and seeds (where 0 often means "all");
    ``minimum=None`` accepts any integer (layer numbers, which count from the top when negative).
    """
    for name in names:
        value = params[name]
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, int) or isinstance(item, bool) or (minimum is not None and item < minimum):
                least = "" if minimum is None else f" of at least {minimum}"
                raise ValueError(f"{name} must hold integers{least}; got {value!r}.")


def check_choices(params: dict, name: str, choices) -> None:
    """Refuse (one sentence) a parameter ``name`` (a value or a list of values) outside ``choices``."""
    value = params[name]
    unknown = [item for item in (value if isinstance(value, list) else [value]) if item not in choices]
    if unknown:
        raise ValueError(f"{name} must be among {', '.join(map(str, choices))}; got {', '.join(map(repr, unknown))}.")


def check_extraction(params: dict) -> None:
    """Refuse (one sentence) a notebook's ``decoder_views`` or ``storage_dtype`` that extraction does not offer.

    The views besides the paper's (``drop``, ``start_token``) and the two storage dtypes of :mod:`isolib.embed`,
    for every notebook that extracts embeddings with both parameters.
    """
    check_choices(params, "decoder_views", ("drop", "start_token"))
    check_choices(params, "storage_dtype", ("float16", "float32"))


def check_layers(params: dict, name: str) -> None:
    """Refuse (one sentence) a ``layers`` parameter that is not a mapping of model names to lists of layer numbers."""
    value = params[name]
    if not all(isinstance(model, str) and isinstance(layers, list)
               and all(isinstance(layer, int) and not isinstance(layer, bool) for layer in layers)
               for model, layers in value.items()):
        raise ValueError(f"{name} must map model names to lists of layer numbers, e.g. {{minilm: [0, 3, 6]}}; "
                         f"got {value!r}.")


# A Hugging Face Hub id: a name, or owner/name, of letters, digits, '-', '_' and '.'.
_HUB_ID = re.compile(r"^(?:[\w.-]+/)?[\w.-]+$")


def check_models(params: dict, name: str) -> None:
    """Refuse (one sentence) a model parameter (a name or a list of names) that is an empty list or holds no offline
    model, model folder or Hub id."""
    from isolib.models import OFFLINE_MODELS

    value = params[name]
    if value == []:
        raise ValueError(f"{name} must name at least one model; got [].")
    for model in value if isinstance(value, list) else [value]:
        # An empty name is no folder, though Path("") is the current one.
        if not isinstance(model, str) or not model or not (model in OFFLINE_MODELS or _HUB_ID.match(model)
                                                           or Path(model).expanduser().is_dir()):
            raise ValueError(f"{name}: {model!r} is neither an offline model ({', '.join(OFFLINE_MODELS)}), "
                             "a model folder, nor a Hugging Face Hub id.")
