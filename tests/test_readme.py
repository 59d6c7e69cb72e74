"""The README and the docs/ pages: short where a newcomer starts, and naming only commands and files that exist.

Commands are read from code only (fenced blocks and inline code spans), never from prose.
"""

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from isolib import project, runner
from isolib.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
MAX_WORDS = 1200

FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.M | re.S)
INLINE = re.compile(r"`([^`\n]+)`")
# make and the targets after it: `make setup data`, `make variant NB=...` (a variable ends the targets).
MAKE = re.compile(r"(?<![\w./-])make((?:[ \t]+[a-z][a-z0-9_-]*)+)")
ISOLIB = re.compile(r"python -m isolib[ \t]+([a-z][\w-]*)([^\n]*)")
MARKDOWN_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HTML_LINK = re.compile(r"(?:href|src)=\"([^\"]+)\"")
# The executed full notebook of a study, which its next full run writes: a link to one may point ahead
# only on a line that says so.
FULL_NOTEBOOK = re.compile(r"^figures/(?P<nb>[0-9]{2}_\w+)/(?P=nb)\.ipynb$")
WRITTEN_LATER = "written by the next full run"


def code(text: str, *, comments: bool = True) -> list[str]:
    """The fenced blocks' contents (without their ``#`` comments unless ``comments``) and the inline code spans."""
    blocks = [match.group(2) for match in FENCE.finditer(text)]
    if not comments:
        blocks = [re.sub(r"(^|\s)#.*$", "", block, flags=re.M) for block in blocks]
    return blocks + INLINE.findall(FENCE.sub("", text))


def commands(text: str) -> list[str]:
    """The command lines of the fenced shell blocks, in order: comments and blank lines out, continuations joined."""
    found = []
    for match in FENCE.finditer(text):
        if match.group(1).strip() not in ("bash", "sh", "shell", "console"):
            continue
        joined = re.sub(r"\\\n\s*", " ", match.group(2))
        for line in joined.splitlines():
            line = re.sub(r"(^|\s)#.*$", "", line).strip()
            if line:
                found.append(line)
    return found


def make_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text()
    targets = set()
    for match in re.finditer(r"^([A-Za-z0-9_./%-]+(?:[ \t]+[A-Za-z0-9_./%-]+)*)[ \t]*:(?![=:])", makefile, re.M):
        targets.update(match.group(1).split())
    phony = re.search(r"^\.PHONY:(.*)$", makefile, re.M)
    return targets | set(phony.group(1).split() if phony else ())


def subcommands() -> dict:
    parser = build_parser()
    (subparsers,) = [action for action in parser._actions if action.choices and action.dest == "command"]
    return subparsers.choices


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def test_the_readme_is_short():
    words = len(README.read_text().split())  # what `wc -w` counts
    assert words <= MAX_WORDS, f"README.md has {words} words; move detail into docs/ (at most {MAX_WORDS})"


def test_the_first_three_commands_set_up_open_jupyterlab_and_run_one_quick_study():
    first = commands(README.read_text())[:3]
    assert len(first) == 3, first
    assert any(line.split()[:2] == ["make", "lab"] for line in first), f"`make lab` is not among {first}"
    assert re.match(r"make (setup|data)\b", first[0]), f"the first command sets up: {first[0]}"
    quick = [line for line in first if re.search(r"python -m isolib reproduce\b", line)]
    assert quick and "--only" in quick[0] and "--profile" not in quick[0], \
        f"one of {first} runs one notebook on the default (quick) profile"


def test_reproduce_defaults_to_the_quick_profile():
    args = build_parser().parse_args(["reproduce", "--only", "00_quickstart"])
    assert args.profile == "quick"


def test_ci_runs_the_readme_test_command():
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    assert ci[-1] == "make test"
    assert ci[-1] in commands(README.read_text()), "the README shows the command CI runs"


def setup_commands(*variables: str) -> str:
    """What `make setup` would run on a fresh checkout, with ``variables`` (NAME=VALUE) set."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    return subprocess.run(["make", "-n", "-B", "setup", *variables], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.skipif(sys.platform != "linux", reason="the CPU index is asked on Linux only")
def test_setup_takes_torchs_cpu_build_on_linux_and_pypis_when_asked():
    pin = re.search(r"^torch==\S+$", (ROOT / "constraints.txt").read_text(), re.M).group(0)
    default = setup_commands()
    cpu_first = f'--no-deps --index-url https://download.pytorch.org/whl/cpu "{pin}"'
    assert cpu_first in default, "on Linux, setup installs torch's CPU build before the project"
    assert default.index(cpu_first) < default.index("-e \".[dev,lab]\""), "torch first, then the project"
    # The control: the documented switch to PyPI's build asks no other index.
    assert "--index-url" not in setup_commands("TORCH_INDEX=")
    assert "whl/cu128" in setup_commands("TORCH_INDEX=https://download.pytorch.org/whl/cu128")


def lab_app(*variables: str):
    """JupyterLab's application as `make lab` would start it, with ``variables`` (NAME=VALUE) set; nothing is started."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    labapp = pytest.importorskip("jupyterlab.labapp")
    # -o: `make lab` as on a set-up checkout, without the commands that would set one up.
    dry_run = subprocess.run(["make", "-n", "-o", ".venv/.installed", "lab", *variables], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
    (line,) = [line for line in re.sub(r"\\\n\s*", " ", dry_run).splitlines() if "bin/jupyter lab" in line]
    argv = shlex.split(line)
    app = labapp.LabApp()
    app.parse_command_line(argv[argv.index("lab") + 1:])
    return app


def served_root(app) -> Path:
    """The folder the server shows: a folder given as an argument, as jupyter_server reads it, else its root_dir."""
    if app.extra_args:
        return (ROOT / app.extra_args[0]).resolve()
    return (ROOT / app.config.ServerApp.get("root_dir", ".")).resolve()


def test_make_lab_serves_the_repository_and_opens_on_notebooks():
    app = lab_app()
    root = served_root(app)
    assert root == ROOT, f"`make lab` serves {root}: the quick-run notes' links to figures/ need the repository"
    opened = app.config.LabApp.get("default_url", "/lab")
    assert opened.startswith("/lab/tree/") and root / opened.removeprefix("/lab/tree/") == project.NOTEBOOK_DIR, \
        f"`make lab` opens on {opened}, not on notebooks/"
    for name in project.notebook_names():
        for link in MARKDOWN_LINK.findall(runner.quick_run_note(name)):
            target = (project.NOTEBOOK_DIR / link).resolve()
            assert target.is_relative_to(root), f"{name}'s quick-run note links {link}, outside what `make lab` serves"


def test_lab_args_reach_jupyterlab():
    assert "allow_root" not in lab_app().config.ServerApp
    server = lab_app("LAB_ARGS=--allow-root --port 8899 --no-browser").config.ServerApp
    given = {key: server.get(key) for key in ("allow_root", "port", "open_browser")}
    assert given == {"allow_root": True, "port": 8899, "open_browser": False}, given


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_make_target_named_exists(page):
    targets = make_targets()
    # A comment in a code block is prose ("what make figures runs"); inline code is not.
    named = {target for span in code(page.read_text(), comments=False) for match in MAKE.finditer(span)
             for target in match.group(1).split()}
    missing = sorted(named - targets)
    assert not missing, f"{page_id(page)} names make targets the Makefile lacks: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_isolib_subcommand_and_option_named_exists(page):
    parsers = subcommands()
    problems = []
    for span in code(page.read_text()):
        for match in ISOLIB.finditer(span):
            name, rest = match.group(1), re.sub(r"(^|\s)#.*$", "", match.group(2))
            if name not in parsers:
                problems.append(f"python -m isolib {name}: no such subcommand")
                continue
            sub = parsers[name]
            words = rest.split()
            positional = [action for action in sub._actions if not action.option_strings]
            if positional and positional[0].choices and words and not words[0].startswith("-"):
                for choice in words[0].split("|"):
                    if choice not in positional[0].choices:
                        problems.append(f"python -m isolib {name} {choice}: not one of {list(positional[0].choices)}")
            for word in words:
                option = word.split("=")[0]
                if re.fullmatch(r"--?[a-z][\w-]*", option) and option not in sub._option_string_actions:
                    problems.append(f"python -m isolib {name} {option}: no such option")
    assert not problems, f"{page_id(page)}: " + "; ".join(problems)


def links(text: str) -> list[tuple[str, str]]:
    """(target, the line it is on) of every Markdown and HTML link outside code blocks."""
    found = []
    for line in FENCE.sub("", text).splitlines():
        for target in MARKDOWN_LINK.findall(line) + HTML_LINK.findall(line):
            found.append((target, line))
    return found


def local_target(page: Path, target: str) -> Path | None:
    if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
        return None  # a URL, or an anchor in the same page
    return (page.parent / target.split("#", 1)[0]).resolve()


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_relative_link_resolves_to_a_file_of_the_repository(page):
    broken = []
    for target, line in links(page.read_text()):
        path = local_target(page, target)
        if path is None:
            continue
        if not path.is_relative_to(ROOT):
            broken.append(f"{target} (outside the repository)")
        elif not path.exists():
            ahead = FULL_NOTEBOOK.match(str(path.relative_to(ROOT))) and WRITTEN_LATER in line
            if not ahead:
                broken.append(target)
    assert not broken, f"{page_id(page)} links to what does not exist: {broken}"


def test_the_readme_says_which_full_runs_have_no_executed_notebook_yet():
    """A study folder without its executed full notebook is named in the README, linked on a line saying the next
    full run writes it; no page says so of a notebook that is committed."""
    figures = ROOT / "figures"
    missing = {f"figures/{folder.name}/{folder.name}.ipynb" for folder in figures.iterdir()
               if folder.is_dir() and not (folder / f"{folder.name}.ipynb").exists()}

    def announced(page):
        targets = [local_target(page, target) for target, line in links(page.read_text()) if WRITTEN_LATER in line]
        return {str(path.relative_to(ROOT)) for path in targets
                if path is not None and FULL_NOTEBOOK.match(str(path.relative_to(ROOT)))}

    assert announced(README) == missing, "README.md: link each missing executed notebook, saying " + WRITTEN_LATER
    for page in PAGES:
        assert announced(page) <= missing, f"{page_id(page)} says a committed notebook is still to be written"


def test_every_docs_page_can_be_reached_from_the_readme():
    reached, todo = {README}, [README]
    while todo:
        page = todo.pop()
        for target, _ in links(page.read_text()):
            path = local_target(page, target)
            if path is not None and path.suffix == ".md" and path.exists() and path not in reached:
                reached.add(path)
                todo.append(path)
    unreached = [page_id(page) for page in PAGES if page not in reached]
    assert not unreached, f"no link leads from README.md to {unreached}"
