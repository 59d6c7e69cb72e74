"""A notebook's parameters: what its ``parameters`` cell declares, the profiles' values, ``-p`` overrides, and their checks.

Every parameter a run would fail on or misread is refused in one sentence before any kernel starts
(:func:`check_parameters`): its declared type, finite numbers within bounds, then the study's own rules
(``isolib.studies.<study>.settings.check_parameters``, built from the checks here). A ``-p`` value is read
as YAML only once it is known to be small and plain (:func:`read_override`).
"""

from __future__ import annotations

import ast
import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from isolib import project, studies
from isolib.checks import (
    DEEPEST_NESTING,
    check_bounded,
    check_choices,
    check_integers,
    check_models,
)


@dataclass(frozen=True)
class Declared:
    """One parameter of a notebook's ``parameters`` cell: ``name: annotation = default  # comment``."""

    name: str
    annotation: str
    default: object
    comment: str


# Read without jupytext or papermill: importing them (nbformat's JSON schema checks) takes seconds, and
# a bad -p must be refused at once. tests/test_runner.py checks this reading against papermill's.
_PARAMETERS_CELL = re.compile(r'^# %%.*tags=\[[^\]]*"parameters"[^\]]*\].*\n((?:(?!# %%).*\n)*)', re.M)
_TYPES = {"int": int, "float": float, "str": str, "bool": bool, "list": list, "dict": dict}


def parameter_declarations(notebook: str) -> dict[str, Declared]:
    """The notebook's parameters, in the order its ``parameters`` cell declares them (``notebooks/<notebook>.py``)."""
    source = (project.NOTEBOOK_DIR / f"{notebook}.py").read_text()
    cell = _PARAMETERS_CELL.search(source)
    if cell is None:
        raise ValueError(f"{notebook}.py has no cell tagged parameters.")
    lines = cell.group(1).splitlines()
    declared = {}
    for node in ast.parse(cell.group(1)).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            comment = lines[node.lineno - 1].partition("#")[2].strip()
            declared[node.target.id] = Declared(node.target.id, ast.unparse(node.annotation),
                                                ast.literal_eval(node.value), comment)
    return declared


def declared_parameters(notebook: str) -> list[str]:
    """Names of the notebook's parameters, in the order its ``parameters`` cell declares them."""
    return list(parameter_declarations(notebook))


def check_parameters(notebook: str, params: dict) -> None:
    """Refuse, in one sentence, parameters a run of ``notebook`` would fail on or misread, before any kernel starts.

    Each value must have its declared type (the annotation in the ``parameters`` cell: an ``int``
    is no ``float`` or ``bool``, a ``list`` no string) and hold only what :func:`check_bounded` allows
    (finite numbers, integers of 32 bits, mapping keys of one type); then the study's own rules apply:
    ``check_parameters(params)`` of ``isolib.studies.<name>`` (the notebook's name without its number;
    :func:`check_quickstart_parameters` for 00_quickstart), given every parameter, the defaults completed
    by ``params``.
    """
    declared = parameter_declarations(notebook)
    for name, value in params.items():
        expected = _TYPES[declared[name].annotation]
        numeric = expected in (int, float)
        right_type = (isinstance(value, (int, float) if expected is float else expected)
                      and not (numeric and isinstance(value, bool)))
        if not right_type:
            # A list of one written without its brackets (-p models minilm) is the likely slip: show the brackets.
            bracketed = (f": a list of one is written {yaml.safe_dump([value], default_flow_style=True).strip()}"
                         if expected is list and not isinstance(value, (list, dict)) else "")
            raise ValueError(f"Notebook {notebook}: {name} must be of type {declared[name].annotation} "
                             f"({declared[name].comment}); got {value!r}{bracketed}.")
        try:
            check_bounded(name, value)
        except ValueError as error:
            raise ValueError(f"Notebook {notebook}: {error}") from None
    if studies.is_study(notebook):
        check = studies.part(notebook, "settings").check_parameters
    elif notebook == "00_quickstart":  # no study: its rules are here
        check = check_quickstart_parameters
    elif notebook == "06_model_card":  # no study: a card of any model, whose settings isolib.card checks
        from isolib.card.settings import check_notebook_parameters as check
    else:
        return
    try:
        check({name: parameter.default for name, parameter in declared.items()} | params)
    except ValueError as error:
        raise ValueError(f"Notebook {notebook}: {error}") from None


def check_quickstart_parameters(params: dict) -> None:
    """Refuse, in one sentence, parameters of notebook 00 its run would fail on (it has no study module to hold them).

    Parameters
    ----------
    params : dict
        Every parameter of the notebook: the defaults of its parameters cell completed by the run's.
    """
    check_models(params, "models")
    check_choices(params, "storage_dtype", ("float16", "float32"))
    check_integers(params, ["n_sentences", "random_state"])
    check_integers(params, ["n_tokens"], minimum=2)  # the baseline is a cosine between two tokens at least


# A -p VALUE is a scalar, list or mapping a person types: it is bounded before YAML builds it, so that none can
# expand (an alias repeated, or one referring to itself) or nest past what YAML's reader recurses through.
LONGEST_OVERRIDE = 10_000


def read_override(name: str, text: str):
    """The value of ``-p NAME TEXT``: ``text`` read as YAML (``0``, ``[minilm, mpnet]``, ``true``), refused in one
    sentence if it is longer than :data:`LONGEST_OVERRIDE` characters, uses an anchor or alias (``&a``, ``*a``),
    nests deeper than :data:`DEEPEST_NESTING` or is not YAML. What it holds is checked with the other parameters
    (:func:`check_parameters`), before the variant's folder is named from it."""
    if len(text) > LONGEST_OVERRIDE:
        raise ValueError(f"The value of -p {name} has {len(text):,} characters, more than the {LONGEST_OVERRIDE:,} "
                         "a parameter may have.")
    try:
        depth = 0
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise ValueError(f"The value of -p {name} uses a YAML anchor or alias (&{event.anchor} or "
                                 f"*{event.anchor}); write the value out in full.")
            depth += isinstance(event, yaml.CollectionStartEvent) - isinstance(event, yaml.CollectionEndEvent)
            if depth > DEEPEST_NESTING:
                raise ValueError(f"The value of -p {name} nests lists or mappings deeper than {DEEPEST_NESTING} "
                                 "levels.")
        return yaml.safe_load(text)
    except yaml.YAMLError:
        raise ValueError(f"The value of -p {name} is not valid YAML: {text!r}.") from None


def parse_overrides(pairs: list[list[str]] | None) -> dict:
    """``-p NAME VALUE`` pairs as parameters, each VALUE read by :func:`read_override`."""
    return {name: read_override(name, text) for name, text in pairs or []}


def parameters(notebook: str, profile: str, overrides: dict | None = None, *, output: Path | None = None) -> dict:
    """Papermill parameters of one run: the profile's YAML plus ``profile`` and ``output_dir``, then ``overrides``.

    The parameters are checked (:func:`check_parameters`); a bad one raises ValueError in one sentence.
    The quick profile injects nothing, so its run is exactly the notebook's defaults. With
    ``overrides`` the run is a variant: ``output_dir`` is its own folder under ``build/variants/``
    and ``profile`` reads e.g. ``quick with corpora = ['wikitext2']``. ``output`` sends the outputs
    elsewhere than the profile's folder (:func:`check_figures` reruns the full profile into ``build/``).
    """
    if profile not in project.PROFILES:
        raise ValueError(f"Unknown profile '{profile}'; choose one of {', '.join(project.PROFILES)}.")
    params = {}
    if profile != "quick":
        path = project.PARAMS_DIR / notebook / f"{profile}.yaml"
        if not path.exists():
            raise FileNotFoundError(f"Notebook {notebook} has no {profile} parameters: {path} is missing.")
        params = yaml.safe_load(path.read_text()) or {}
        # Relative to the kernel's folder (notebooks/): the executed full run kept in figures/ names no machine's path.
        params.update(profile=profile, output_dir=os.path.relpath(project.output_dir(notebook, profile), project.NOTEBOOK_DIR))
    if overrides:
        settable = [name for name in declared_parameters(notebook) if name not in ("profile", "output_dir")]
        unknown = sorted(set(overrides) - set(settable))
        if unknown:
            meant = [match for name in unknown for match in difflib.get_close_matches(name, settable, n=1)]
            raise ValueError(f"Notebook {notebook} has no parameter {', '.join(unknown)} to override "
                             "(profile and output_dir are set by the runner)"
                             + (f"; did you mean {', '.join(meant)}?" if meant else "."))
        params.update(overrides)
    if params:
        check_parameters(notebook, params)  # before a variant's folder is named from them
    if overrides:
        described = ", ".join(f"{name} = {value!r}" for name, value in overrides.items())
        params.update(profile=f"{profile} with {described}",
                      output_dir=str(project.variant_dir(notebook, profile, overrides) / "figures"))
    if output is not None:
        params.update(profile=profile, output_dir=str(output))
    return params

