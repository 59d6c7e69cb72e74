"""Build the book of the full results (Jupyter Book 1.x) from what figures/ holds, executing nothing.

    python book/build.py [--figures figures] [--output build/book] [--strict]

It copies book/ (configuration, intro page, style) and figures/ into OUTPUT/src/, writes the table of
contents there, and builds OUTPUT/html/ (open OUTPUT/html/index.html). Each study of figures/<NN_name>/ is a
chapter: its executed full notebook <NN_name>.ipynb with its RESULTS.md as a section, or its RESULTS.md
alone while its executed notebook is not there yet. figures/README.md is the overview, docs/glossary.md the
glossary every page links to.
"""

import argparse
import json
import re
import shutil
import sys
import time
from pathlib import Path

import yaml

BOOK = Path(__file__).resolve().parent
ROOT = BOOK.parent
GLOSSARY = ROOT / "docs" / "glossary.md"
CARDS_PAGE = "COMPARISON.md"  # a folder of model cards (figures/06_model_card/): the page setting them side by side


def _heading(lines) -> str | None:
    return next((line[2:].strip() for line in lines if line.startswith("# ")), None)


def notebook_title(path: Path) -> str | None:
    """The first level-1 heading of the notebook's markdown cells."""
    cells = json.loads(path.read_text())["cells"]
    sources = ["".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
               for cell in cells if cell["cell_type"] == "markdown"]
    return _heading(line for source in sources for line in source.splitlines())


def card_sections(folder: Path) -> list[dict]:
    """A section per model card of ``folder`` (figures/06_model_card/<model>/card.md)."""
    return [{"file": f"{folder.name}/{card.parent.name}/card", "title": card.parent.name}
            for card in sorted(folder.glob("*/card.md"))]


def chapters(figures: Path) -> list[dict]:
    """One chapter per study folder of ``figures``: its executed notebook (RESULTS.md a section) or RESULTS.md.

    A notebook's chapter is named in the navigation by its study, as RESULTS.md names it ("Ethayarajh (2019)"),
    and its own title, so that a study reads the same whether its notebook is there yet or not.
    """
    found = []
    for folder in sorted(path for path in figures.glob("[0-9][0-9]_*") if path.is_dir()):
        notebook, results = folder / f"{folder.name}.ipynb", folder / "RESULTS.md"
        if notebook.exists():
            chapter = {"file": f"{folder.name}/{folder.name}"}
            study = _heading(results.read_text().splitlines()) if results.exists() else None
            title = notebook_title(notebook)
            cited = study.split(":", 1)[0] if study and ":" in study else ""
            if title:  # "Cai et al. (2021): <its title>"; a page that cites no single paper (05) by its title alone
                chapter["title"] = f"{cited}: {title}" if re.search(r"\(\d{4}\)$", cited) else title
            sections = [{"file": f"{folder.name}/RESULTS", "title": "Results of this run"}] if results.exists() else []
            if (folder / CARDS_PAGE).exists():
                sections += [{"file": f"{folder.name}/{Path(CARDS_PAGE).stem}", "title": "The cards side by side"},
                             *card_sections(folder)]
            if sections:
                chapter["sections"] = sections
        elif results.exists():
            chapter = {"file": f"{folder.name}/RESULTS"}
        elif (folder / CARDS_PAGE).exists():  # the model cards: their comparison, each card a section
            chapter = {"file": f"{folder.name}/{Path(CARDS_PAGE).stem}", "title": "Isotropy cards of the offline models",
                       "sections": card_sections(folder)}
        else:
            continue  # no page of its own yet (00_quickstart's figure is on the overview)
        found.append(chapter)
    return found


def table_of_contents(figures: Path) -> dict:
    return {"format": "jb-book", "root": "index",
            "parts": [{"caption": "Overview", "chapters": [{"file": "README"}, {"file": "glossary"}]},
                      {"caption": "Notebooks", "chapters": chapters(figures)}]}


def glossary_links(text: str, depth: int) -> str:
    """``text`` with its links to the repository's docs/glossary.md pointed at the book's glossary page, for a
    page ``depth`` folders below the book's root (a link written from figures/, figures/<study>/ or notebooks/)."""
    return re.sub(r"\]\((?:\.\./)+docs/glossary\.md", "](" + "../" * depth + "glossary.md", text)


# An output longer than this many lines (text, or the rows of a table shown as Markdown) is collapsed behind
# a "Show output" button, so that a chapter reads as its prose and figures first.
LONGEST_OPEN_OUTPUT = 25


def output_lines(cell: dict) -> int:
    """How many lines a code cell's text and Markdown outputs take."""
    lines = 0
    for output in cell.get("outputs", []):
        for text in (output.get("text"), output.get("data", {}).get("text/markdown")):
            if text:
                lines += len(text if isinstance(text, list) else text.splitlines())
    return lines


def stage_notebook(notebook: Path, target: Path) -> None:
    """A copy of the notebook without the test markers of its code cells (``# NBVAL_CHECK_OUTPUT``), its long
    outputs collapsed (:data:`LONGEST_OPEN_OUTPUT`), its glossary links pointed at the book's."""
    nb = json.loads(notebook.read_text())
    for cell in nb["cells"]:
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        if cell["cell_type"] == "code":
            cell["source"] = re.sub(r"^[ \t]*# NBVAL_[A-Z_]+[ \t]*\n?", "", source, flags=re.M)
            if output_lines(cell) > LONGEST_OPEN_OUTPUT:
                tags = cell.setdefault("metadata", {}).setdefault("tags", [])
                tags.append("hide-output")
        else:
            cell["source"] = glossary_links(source, 1)
    target.write_text(json.dumps(nb, indent=1, ensure_ascii=False))


def stage_cards(folder: Path, target: Path) -> None:
    """The model cards of ``folder`` in ``target``: the comparison, linking to each card's page rather than its
    HTML file, and each card's Markdown page with its figures."""
    comparison = re.sub(r"\]\(([\w.-]+)/card\.html\)", r"](\1/card.md)", (folder / CARDS_PAGE).read_text())
    (target / CARDS_PAGE).write_text(glossary_links(comparison, 1))
    for card in sorted(folder.glob("*/card.md")):
        (target / card.parent.name).mkdir()
        (target / card.parent.name / "card.md").write_text(glossary_links(card.read_text(), 2))
        for image in card.parent.glob("*.png"):
            shutil.copy2(image, target / card.parent.name / image.name)


def stage(figures: Path, src: Path) -> Path:
    """The book's sources in ``src``: book/'s files, figures/'s pages, their PNGs (for raw HTML) in _extra/."""
    shutil.rmtree(src, ignore_errors=True)
    shutil.copytree(BOOK, src, ignore=shutil.ignore_patterns("build.py", "__pycache__", "intro.md"))
    shutil.copy2(BOOK / "intro.md", src / "index.md")
    (src / "README.md").write_text(glossary_links((figures / "README.md").read_text(), 0))
    shutil.copy2(GLOSSARY, src / "glossary.md")
    for folder in sorted(path for path in figures.glob("[0-9][0-9]_*") if path.is_dir()):
        (src / folder.name).mkdir()
        if (folder / "RESULTS.md").exists():
            (src / folder.name / "RESULTS.md").write_text(glossary_links((folder / "RESULTS.md").read_text(), 1))
        if (folder / f"{folder.name}.ipynb").exists():
            stage_notebook(folder / f"{folder.name}.ipynb", src / folder.name / f"{folder.name}.ipynb")
        if (folder / CARDS_PAGE).exists():
            stage_cards(folder, src / folder.name)
        # figures/README.md shows the PNGs as <img src="<study>/<figure>.png">, which Sphinx does not copy.
        (src / "_extra" / folder.name).mkdir(parents=True)
        for image in folder.glob("*.png"):
            shutil.copy2(image, src / "_extra" / folder.name / image.name)
    (src / "references.bib").write_text("")
    toc = src / "_toc.yml"
    toc.write_text(yaml.safe_dump(table_of_contents(figures), sort_keys=False))
    return toc


def build(figures: Path, output: Path, *, strict: bool = False, quiet: bool = True) -> int:
    from jupyter_book.sphinx import build_sphinx

    src = output / "src"
    toc = stage(figures, src)
    for stale in (output / "html", output / ".doctrees"):
        shutil.rmtree(stale, ignore_errors=True)
    result = build_sphinx(src, output / "html", noconfig=True, path_config=str(src / "_config.yml"),
                          confoverrides={"external_toc_path": toc.as_posix(), "latex_individualpages": False}, doctreedir=output / ".doctrees",
                          freshenv=True, warningiserror=strict, keep_going=strict, quiet=quiet)
    return result if isinstance(result, int) else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figures", type=Path, default=ROOT / "figures", help="the full runs (default: figures/)")
    parser.add_argument("--output", type=Path, default=ROOT / "build" / "book",
                        help="sources are staged in OUTPUT/src, the site written to OUTPUT/html (default: build/book)")
    parser.add_argument("--strict", action="store_true", help="fail on any Sphinx warning")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    status = build(args.figures.resolve(), args.output.resolve(), strict=args.strict)
    where = args.output.resolve() / "html" / "index.html"
    print(f"book {'built' if status == 0 else 'FAILED'} in {time.perf_counter() - start:.0f} s: {where}")
    return status


if __name__ == "__main__":
    sys.exit(main())
