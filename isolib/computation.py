"""What a stored step's code is: the computation it runs, without its prose.

:func:`isolib.steps.memoized` keys a stored value by its inputs and by :func:`computation_digest` of the
modules that compute it. The digest reads each module's syntax tree, so docstrings, comments, blank lines
and formatting never enter it, while any change to what the code does (an expression, a default, a
constant, a called function) does. It follows the modules' imports of ``isolib`` transitively, so a study's
compute module also answers for the library code it calls; only modules that store, report or display
(:data:`NOT_COMPUTATION`) are left out. Nothing is imported: the source files under ``isolib/`` are parsed.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

__all__ = ["NOT_COMPUTATION", "computation_digest", "computation_modules", "imported_names"]

# Modules whose code cannot change a computed value: the package's front page (its version), where values
# are stored, how errors and progress read, how findings are judged and written, how figures are drawn, how
# notebooks are run. A compute module that imports one of them is still keyed by its own use of it.
NOT_COMPUTATION = frozenset({
    "isolib", "isolib.cache", "isolib.errors", "isolib._progress", "isolib.findings", "isolib.plotting",
    "isolib.runner", "isolib.cli", "isolib.computation",
})


PACKAGE_ROOT = Path(__file__).resolve().parent


def _source(name: str) -> Path | None:
    """The file of module ``isolib.<...>`` (a package's ``__init__.py``), or None if it is not one."""
    parts = name.split(".")
    if parts[0] != "isolib":
        return None
    base = PACKAGE_ROOT.joinpath(*parts[1:])
    return next((path for path in (base.with_suffix(".py"), base / "__init__.py") if path.is_file()), None)


def imported_names(tree: ast.Module, name: str, is_package: bool) -> set[str]:
    """Every module (and ``module.name``) the tree of module ``name`` imports, at any depth, relative imports resolved.

    ``from isolib import metrics`` gives ``isolib`` and ``isolib.metrics``: a name imported from a package may be a
    module of it.
    """
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _without_docstrings(tree: ast.Module) -> ast.Module:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
                    first.value.value, str):
                node.body = node.body[1:] or [ast.Pass()]
    return tree


def _module_files(name: str, whole_package: bool) -> list[tuple[str, Path]]:
    """A module's file; for a package named by the caller, every file of it."""
    path = _source(name)
    if path is None:
        return []
    if path.name != "__init__.py" or not whole_package:
        return [(name, path)]
    return [(name if file == path else f"{name}.{'.'.join(file.relative_to(path.parent).with_suffix('').parts)}",
             file) for file in sorted(path.parent.rglob("*.py"))]


def computation_modules(modules: Iterable[ModuleType | str]) -> dict[str, ast.Module]:
    """The syntax trees, docstrings removed, of ``modules`` and every ``isolib`` module they import, transitively.

    Parameters
    ----------
    modules : iterable of module or str
        The modules that compute a stored value; a package named here counts with all its files (one reached
        through an import, with its ``__init__`` and what that imports).

    Returns
    -------
    dict of str to ast.Module
        By module name, in name order; :data:`NOT_COMPUTATION` left out unless named in ``modules``.
    """
    pending = [module if isinstance(module, str) else module.__name__ for module in modules]
    named = set(pending)
    trees: dict[str, ast.Module] = {}
    while pending:
        current = pending.pop()
        for name, path in _module_files(current, current in named):
            if name in trees or (name in NOT_COMPUTATION and name not in named):
                continue
            tree = ast.parse(path.read_text(), filename=str(path))
            imported = imported_names(tree, name, path.name == "__init__.py")
            pending += sorted({module for module in imported if _source(module) is not None} - trees.keys())
            trees[name] = _without_docstrings(tree)
    return dict(sorted(trees.items()))


def computation_digest(modules: Iterable[ModuleType | str]) -> str:
    """SHA-256 of what ``modules`` compute (:func:`computation_modules`): their code, never their prose.

    Examples
    --------
    >>> import isolib.metrics
    >>> len(computation_digest([isolib.metrics]))
    64
    """
    digest = hashlib.sha256()
    for name, tree in computation_modules(modules).items():
        digest.update(name.encode())
        digest.update(ast.dump(tree, annotate_fields=False, include_attributes=False).encode())
    return digest.hexdigest()
