"""The book of the full results (book/build.py, `make book`): it builds from the committed figures/ without a
Sphinx warning, and every page, image and internal link of the site resolves."""

import importlib.util
import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "figures"
SCRIPT = ROOT / "book" / "build.py"


def _build_module():
    spec = importlib.util.spec_from_file_location("book_build", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Page(HTMLParser):
    """The ids, links (<a href>, <link href>) and sources (<img>, <script>) of one HTML page."""

    def __init__(self, path: Path):
        super().__init__()
        self.ids, self.links, self.sources, self.images, self.title = set(), [], [], [], ""
        self._in_title = False
        self.feed(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if attrs.get(key):
                self.ids.add(attrs[key])
        if tag in ("a", "link") and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag in ("img", "script", "source") and attrs.get("src"):
            self.sources.append(attrs["src"])
            if tag == "img":
                self.images.append(attrs["src"])
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """The book built as `make book` builds it, into a temporary folder, failing on any Sphinx warning."""
    output = tmp_path_factory.mktemp("book")
    result = subprocess.run([sys.executable, str(SCRIPT), "--output", str(output), "--strict"],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    html = (output / "html").resolve()
    # _static/ holds the theme's Jinja templates, which are not pages.
    pages = {path: Page(path) for path in html.rglob("*.html") if "_static" not in path.relative_to(html).parts}
    toc = yaml.safe_load((output / "src" / "_toc.yml").read_text())
    return html, pages, toc


def toc_files(toc) -> list[str]:
    found = [toc["root"]]

    def walk(entries):
        for entry in entries:
            found.append(entry["file"])
            walk(entry.get("sections", []))

    for part in toc["parts"]:
        walk(part["chapters"])
    return found


def target(page: Path, url: str) -> tuple[Path, str]:
    """The file an internal URL of ``page`` names (its query dropped) and its fragment."""
    parts = urlsplit(url)
    return ((page.parent / unquote(parts.path)).resolve() if parts.path else page), unquote(parts.fragment)


def internal(url: str) -> bool:
    parts = urlsplit(url)
    return not parts.scheme and not parts.netloc and not url.startswith("//")


def test_every_study_has_its_pages(book):
    html, _, toc = book
    files = toc_files(toc)
    assert files[:3] == ["index", "README", "glossary"], "the intro, the overview (figures/README.md), the glossary"
    for folder in sorted(path for path in FIGURES.glob("[0-9][0-9]_*") if path.is_dir()):
        if (folder / f"{folder.name}.ipynb").exists():
            assert f"{folder.name}/{folder.name}" in files, f"the executed notebook of {folder.name} is not in the book"
        if (folder / "RESULTS.md").exists():
            assert f"{folder.name}/RESULTS" in files, f"{folder.name}/RESULTS.md is not in the book"
        for card in folder.glob("*/card.md"):  # the model cards, each a page beside their comparison
            assert {f"{folder.name}/COMPARISON", f"{folder.name}/{card.parent.name}/card"} <= set(files)
    for file in files:
        assert (html / f"{file}.html").is_file(), f"{file} was not built"


def test_every_page_has_a_title_and_is_reached_from_the_first(book):
    html, pages, toc = book
    reached, todo = {html / "index.html"}, [html / "index.html"]
    while todo:
        page = todo.pop()
        for url in pages[page].links:
            if not internal(url):
                continue
            linked, _ = target(page, url)
            if linked.suffix == ".html" and linked in pages and linked not in reached:
                reached.add(linked)
                todo.append(linked)
    for file in toc_files(toc):
        page = html / f"{file}.html"
        title = " ".join(pages[page].title.split())
        assert title and "no title" not in title, f"{file}.html has no title"
        assert page in reached, f"no link leads from index.html to {file}.html"


def test_every_internal_link_image_and_anchor_resolves(book):
    html, pages, _ = book
    broken = []
    for page, parsed in pages.items():
        for url in parsed.links + parsed.sources:
            if not internal(url) or url.startswith(("data:", "mailto:", "javascript:")):
                continue
            linked, fragment = target(page, url)
            name = f"{page.relative_to(html)}: {url}"
            if not linked.is_relative_to(html):
                broken.append(f"{name} (outside the site)")
            elif not linked.is_file():
                broken.append(name)
            elif fragment and linked.suffix == ".html" and fragment not in pages[linked].ids:
                broken.append(f"{name} (no such anchor)")
    assert not broken, f"{len(broken)} broken: " + "; ".join(broken[:20])


def test_every_image_is_a_picture_and_every_figure_of_a_notebook_is_shown(book):
    html, pages, toc = book
    signatures = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"<?xml", b"<svg")
    for page, parsed in pages.items():
        for url in parsed.images:
            if url.startswith("data:"):
                continue
            data = target(page, url)[0].read_bytes()[:64]
            assert data.lstrip().startswith(signatures), f"{page.relative_to(html)}: {url} is not an image"
    for file in toc_files(toc):
        notebook = FIGURES / f"{file}.ipynb"
        if not notebook.exists():
            continue
        figures = sum(1 for cell in json.loads(notebook.read_text())["cells"] if cell["cell_type"] == "code"
                      for output in cell.get("outputs", []) if "image/png" in output.get("data", {}))
        shown = len(pages[html / f"{file}.html"].images)
        assert shown >= figures, f"{file}.html shows {shown} images, the notebook holds {figures}"


def test_the_overview_shows_the_committed_figures(book):
    html, pages, _ = book
    images = {(html / unquote(url)).resolve() for url in pages[html / "README.html"].images}
    committed = {(html / path.relative_to(FIGURES)).resolve() for path in FIGURES.glob("*/*.png")
                 if f'src="{path.relative_to(FIGURES)}"' in (FIGURES / "README.md").read_text()}
    assert committed and committed <= images


def test_a_study_without_its_executed_notebook_shows_its_results_page(tmp_path):
    for name, files in {"00_intro": ["fig.png"], "01_done": ["01_done.ipynb", "RESULTS.md"],
                        "02_pending": ["RESULTS.md"], "03_survey": ["03_survey.ipynb", "RESULTS.md"]}.items():
        (tmp_path / name).mkdir()
        for file in files:
            # A study's page names its paper; a page on several papers' measures (notebook 05) does not.
            heading = "Every measure: results" if name == "03_survey" else "Someone (2020): results of this run"
            text = f"# {heading}\n" if file == "RESULTS.md" else ""
            if file.endswith(".ipynb"):
                text = json.dumps({"cells": [{"cell_type": "markdown", "source": ["# A title\n"], "metadata": {}}]})
            (tmp_path / name / file).write_text(text)
    assert _build_module().chapters(tmp_path) == [
        {"file": "01_done/01_done", "title": "Someone (2020): A title",
         "sections": [{"file": "01_done/RESULTS", "title": "Results of this run"}]},
        {"file": "02_pending/RESULTS"},
        {"file": "03_survey/03_survey", "title": "A title",
         "sections": [{"file": "03_survey/RESULTS", "title": "Results of this run"}]},
    ]


def test_a_folder_of_cards_with_its_executed_notebook_keeps_the_comparison_and_the_cards(tmp_path):
    folder = tmp_path / "06_cards"
    (folder / "minilm").mkdir(parents=True)
    (folder / "06_cards.ipynb").write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": ["# Cards\n"],
                                                                  "metadata": {}}]}))
    (folder / "COMPARISON.md").write_text("# Side by side\n")
    (folder / "minilm" / "card.md").write_text("# minilm\n")
    assert _build_module().chapters(tmp_path) == [
        {"file": "06_cards/06_cards", "title": "Cards",
         "sections": [{"file": "06_cards/COMPARISON", "title": "The cards side by side"},
                      {"file": "06_cards/minilm/card", "title": "minilm"}]}]


def test_a_long_output_is_collapsed_and_a_short_one_is_not(tmp_path):
    build = _build_module()
    lines = build.LONGEST_OPEN_OUTPUT
    cells = [{"cell_type": "code", "source": "# NBVAL_CHECK_OUTPUT\nprint(x)", "metadata": {},
              "outputs": [{"output_type": "stream", "name": "stdout", "text": "row\n" * count}]}
             for count in (lines, lines + 1)]
    cells.append({"cell_type": "code", "source": "table", "metadata": {"tags": ["nbval-check-output"]},
                  "outputs": [{"output_type": "display_data", "data": {"text/markdown": ["| a |\n"] * (lines + 1)}}]})
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": cells}))
    build.stage_notebook(tmp_path / "nb.ipynb", tmp_path / "staged.ipynb")
    staged = json.loads((tmp_path / "staged.ipynb").read_text())["cells"]
    assert [cell["metadata"].get("tags", []) for cell in staged] == [
        [], ["hide-output"], ["nbval-check-output", "hide-output"]]
    assert staged[0]["source"] == "print(x)"
