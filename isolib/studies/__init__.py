"""One package per study notebook, same name without the number: what only that study does.

=======================================  =============================================
notebook                                 study package
=======================================  =============================================
``01_ethayarajh_contextuality``          :mod:`isolib.studies.ethayarajh_contextuality`
``02_cai_clusters_manifolds``            :mod:`isolib.studies.cai_clusters_manifolds`
``03_rajaee_cluster_isotropy``           :mod:`isolib.studies.rajaee_cluster_isotropy`
``04_mickus_isotropy_clusters``          :mod:`isolib.studies.mickus_isotropy_clusters`
``05_every_measure``                     :mod:`isolib.studies.every_measure`
=======================================  =============================================

Each package is split by what changes for different reasons: ``settings`` (the citation, the paper's
values, the parameters and their check), ``compute`` (everything that produces evidence; the only code
whose source keys stored steps), ``claims`` (each claim judged from the evidence tables alone:
``record(evidence)``) and ``figures``. The library never imports a study, no study imports another, and
this module is the one place that finds a study's part by its notebook's name (:func:`part`), for the
command line and the runner (``tests/test_layout.py`` checks all three).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

__all__ = ["PARTS", "package_name", "is_study", "part"]

PARTS = ("settings", "compute", "claims", "figures")


def package_name(notebook: str) -> str:
    """``isolib.studies.<name>`` for notebook ``NN_<name>``."""
    return f"{__name__}.{notebook.split('_', 1)[-1]}"


def is_study(notebook: str) -> bool:
    """Whether ``notebook`` has a study package (``00_quickstart`` has none: it judges no claim)."""
    return (Path(__file__).parent / notebook.split("_", 1)[-1] / "__init__.py").is_file()


def part(notebook: str, name: str) -> ModuleType:
    """The ``settings``, ``compute``, ``claims`` or ``figures`` module of ``notebook``'s study."""
    if name not in PARTS:
        raise ValueError(f"A study has no part {name!r}; its parts are {', '.join(PARTS)}.")
    if not is_study(notebook):
        raise ValueError(f"{notebook} is not a study: it has no package under isolib/studies/.")
    return importlib.import_module(f"{package_name(notebook)}.{name}")
