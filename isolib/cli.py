"""``python -m isolib``: data fetch/verify, reproduce, check the committed figures, judge stored evidence, student
copies, the embedding cache, the overview, and a model's isotropy card."""

from __future__ import annotations

import argparse
import math
import sys

from isolib.errors import DataError, IsolibError


def number_option(what: str, *, low: float = 0.0, high: float = math.inf):
    """An argparse ``type`` reading a finite number in ``[low, high]``; anything else is refused in one sentence.

    ``float`` alone would take ``nan``, ``inf`` and negatives, which e.g. turn a prune by age into a prune of
    every entry or a comparison into one that passes anything. argparse names the option before ``what``.
    """
    upper = "" if math.isinf(high) else f" and at most {high:g}"

    def read(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and low <= value <= high):
            raise argparse.ArgumentTypeError(f"{what} must be a finite number of at least {low:g}{upper}; "
                                             f"got {text!r}.")
        return value

    return read


def _data(args) -> int:
    from isolib import datasets

    if args.action == "fetch":
        datasets.fetch(args.name, force=args.force)
        return 0
    if args.record and args.name != "all":
        raise DataError(f"--record needs every dataset verified, not only {args.name!r}; leave out the name.")
    results = datasets.verify(args.name)
    bad = [r for r in results if r.status != "ok"]
    for result in bad:  # only the files to fix; the total follows
        print(f"{result.status:<8} {result.dataset:<16} {result.path}")
    folder, chosen_by = datasets.chosen_data_dir()
    print(f"{len(results) - len(bad)} of {len(results)} files verified in {folder} ({chosen_by})")
    if bad:
        print(f"Fix: {datasets.remedy(args.name, [(r.dataset, r.file) for r in bad])}.", file=sys.stderr)
    elif args.record:
        recorded = datasets.record_data_dir()
        print(f"recorded in {datasets.DATA_DIR_RECORD}: the CLI and kernels started without ISOLIB_DATA_DIR use "
              f"{recorded}" if recorded else f"{folder} is found without a record")
    return 1 if bad else 0


def _reproduce(args) -> int:
    from isolib.parameters import parse_overrides
    from isolib.runner import reproduce

    results = reproduce(args.profile, args.only, store=args.store, overrides=parse_overrides(args.parameter))
    failed = [r.notebook for r in results if not r.ok]
    if failed:
        print(f"{len(failed)} of {len(results)} notebooks failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def _check_figures(args) -> int:
    from isolib.comparison import check_figures
    from isolib.project import FIGURES_DIR

    differences = check_figures(args.notebook, rtol=args.rtol, atol=args.atol, outputs=args.outputs)
    for difference in differences:
        print(difference, file=sys.stderr)
    where = FIGURES_DIR / args.notebook
    print(f"{args.notebook}: " + (f"{len(differences)} difference(s) from {where}" if differences else
                                  f"tables within rtol {args.rtol:g}, atol {args.atol:g} and statuses equal to {where}"))
    return 1 if differences else 0


def _judge(args) -> int:
    import time
    from pathlib import Path

    from isolib import studies
    from isolib.evidence import judge
    from isolib.findings import count_line, write_overview
    from isolib.project import FIGURES_DIR, output_dir, study_notebooks

    if args.folder and len(args.notebook) != 1:
        raise ValueError("--folder holds the evidence of one study: name that study's notebook.")
    for notebook in args.notebook or study_notebooks():
        if notebook not in study_notebooks():
            raise ValueError(f"{notebook} is not a study; the studies are: {', '.join(study_notebooks())}.")
        folder = Path(args.folder) if args.folder else output_dir(notebook, args.profile)
        start = time.perf_counter()
        record = judge(folder, studies.part(notebook, "claims").record)
        print(f"{notebook}: judged {folder} in {time.perf_counter() - start:.1f} s. {count_line(record.findings)}")
    if args.profile == "full" and not args.folder:
        print(f"wrote {write_overview(FIGURES_DIR, study_notebooks())}")
    return 0


def _new_study(args) -> int:
    from isolib.scaffold import new_study

    for path in new_study(args.name, args.title or args.name.replace("_", " ").capitalize()):
        print(f"wrote {path}")
    return 0


def _student(args) -> int:
    from pathlib import Path

    from isolib.student import student_copies

    for copy in student_copies(args.notebook, Path(args.output) if args.output else None):
        print(f"wrote {copy}")
    return 0


def _cache(args) -> int:
    from isolib import cache, integrity
    from isolib.integrity import cache_root

    if args.action == "prune":
        removed = cache.prune(older_than_days=args.older_than, model=args.model, folders=args.folder,
                              everything=args.all, dry_run=args.dry_run)
        verb = "would delete" if args.dry_run else "deleted"
        for entry in removed:
            print(f"{verb} {entry.path.name} ({entry.model or entry.status}, {integrity.human_size(entry.size)})")
        print(f"{verb} {len(removed)} folder(s), {integrity.human_size(sum(entry.size for entry in removed))}")
        return 0
    if args.action == "verify":
        damaged = cache.verify()
        for entry in damaged:
            print(f"set aside {entry.path.name}: {entry.problem}")
        print(f"{len(damaged)} damaged entr{'y' if len(damaged) == 1 else 'ies'} set aside; the next run that asks "
              "for one computes it again." if damaged else "every entry matches its manifest.")
        return 0
    found = cache.entries()
    if args.action == "list":
        print(cache.listing(found).to_string(index=False) if found else f"{cache_root() / 'embeddings'} is empty.")
        return 0
    print(cache.sizes(found).to_string(index=False))
    return 0


def _card(args) -> int:
    from isolib.card import CardSettings, make_card
    from isolib.card.page import statement_counts

    settings = CardSettings(corpus=args.corpus, split=args.split, token_budget=args.token_budget,
                            n_points=args.points, sts_pairs=args.sts_pairs, n_resamples=args.resamples,
                            static_baseline="" if args.static_baseline == "none" else args.static_baseline,
                            n_jobs=args.jobs, device=args.device)
    card = make_card(args.model, settings, out=args.out)
    print(f"{args.model}: {statement_counts(card.record.findings)}")
    print(f"wrote {card.markdown} and {card.html}")
    return 0


def _overview(args) -> int:
    from isolib.comparison import validate_committed
    from isolib.findings import write_overview
    from isolib.project import FIGURES_DIR, study_notebooks

    for notebook in study_notebooks():  # a damaged committed input is named before anything is written
        validate_committed(notebook, FIGURES_DIR / notebook)
    print(f"wrote {write_overview(FIGURES_DIR, study_notebooks())}")
    return 0


PROFILE_COSTS = """Execute the study notebooks with Papermill under one profile:

  quick   the default: the defaults of each notebook's parameters cell (fewer models, subsets of
          the data); a few minutes per notebook on two CPU cores; writes build/quick/.
  student the notebooks with exercises, as small as their exercises allow, the profile their
          student copies open on (TEACHING.md): under 2 minutes each on two cores; writes build/student/.
  full    all data, every offline model (make figures); on two CPU cores 00 about 6 min, 01 about
          80 min, 02 about 30 min, 03 about 4 h, 04 about 3 h, 05 about 15 min; writes the committed
          figures/.
  paper   the papers' own models from the Hugging Face Hub: needs a network and ideally a GPU
          (-p device cuda); writes build/paper/."""


def build_parser() -> argparse.ArgumentParser:
    from isolib.project import PROFILES

    parser = argparse.ArgumentParser(prog="python -m isolib", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    data = commands.add_parser("data", help="fetch or verify the datasets in the data folder (ISOLIB_DATA_DIR, else "
                               "the one make data recorded; docs/install.md)")
    data.add_argument("action", choices=("fetch", "verify"))
    data.add_argument("name", nargs="?", default="all", help="dataset name or 'all' (default)")
    data.add_argument("--force", action="store_true", help="download again even if a verified copy exists")
    data.add_argument("--record", action="store_true",
                      help="verify: when every dataset verifies, record the folder in .isolib-data-dir, where the CLI "
                           "and kernels started without ISOLIB_DATA_DIR find it (make data does this)")
    data.set_defaults(func=_data)

    run = commands.add_parser("reproduce", help="execute the notebooks with Papermill (the quick profile unless "
                              "--profile says otherwise)", formatter_class=argparse.RawDescriptionHelpFormatter,
                              description=PROFILE_COSTS)
    run.add_argument("--profile", choices=PROFILES, default="quick",
                     help="quick (default), student, full or paper; what each costs is above")
    run.add_argument("--only", action="append", metavar="NAME", help="run only this notebook (repeatable)")
    run.add_argument("--store", action="store_true",
                     help="quick profile: also store the executed notebook as notebooks/NAME.ipynb")
    run.add_argument("-p", "--parameter", nargs=2, action="append", metavar=("NAME", "VALUE"),
                     help="override one parameter of the notebook named by --only (VALUE is YAML, e.g. "
                          "'[minilm, mpnet]'); the run goes to build/variants/ (repeatable)")
    run.set_defaults(func=_reproduce)

    check = commands.add_parser("check-figures", help="rerun a notebook's full profile into build/check/ and compare "
                                "its tables and statuses (results.json) with the committed figures/ folder")
    check.add_argument("notebook", help="notebook name, e.g. 00_quickstart")
    # A relative tolerance is a share of the committed number: above 1, even a number of the other sign passes.
    check.add_argument("--rtol", type=number_option("the relative tolerance", high=1.0), default=1e-4,
                       help="relative tolerance on numbers, from 0 to 1 (default 1e-4)")
    check.add_argument("--atol", type=number_option("the absolute tolerance"), default=1e-6,
                       help="absolute tolerance on numbers, at least 0 (default 1e-6)")
    check.add_argument("--outputs", metavar="FOLDER",
                       help="compare FOLDER, the outputs of a full run already made (e.g. the figures workflow's "
                            "artifact), instead of rerunning")
    check.set_defaults(func=_check_figures)

    judge = commands.add_parser("judge", help="re-judge studies' claims from their stored evidence and rewrite their "
                                "results.json and RESULTS.md (no model is loaded, nothing is recomputed)")
    judge.add_argument("notebook", nargs="*", help="study notebooks, e.g. 04_mickus_isotropy_clusters (default: all)")
    judge.add_argument("--profile", choices=PROFILES, default="full",
                       help="whose evidence: full (default, the committed figures/ and figures/README.md), quick "
                            "(build/quick/) or paper (build/paper/)")
    judge.add_argument("--folder", help="judge the evidence in this folder instead (e.g. notebooks/quick_results/NB, "
                                        "the stored quick run's); results.json and RESULTS.md are written there")
    judge.set_defaults(func=_judge)

    new = commands.add_parser("new-study", help="write a new study from the template (docs/new-study/): its package, "
                              "notebook, profiles and tests, numbered after the last notebook")
    new.add_argument("name", help="a lower-case identifier, e.g. author_topic")
    new.add_argument("--title", help="the notebook's title, e.g. 'Author (2025): topic'")
    new.set_defaults(func=_new_study)

    student = commands.add_parser("student", help="write the student copy of a study notebook, as nbgrader's "
                                  "generate_assignment releases it (default build/handout/)")
    student.add_argument("notebook", nargs="?", default="all",
                         help="notebook name, e.g. 04_mickus_isotropy_clusters, or 'all' (default): every study")
    student.add_argument("--output", help="folder for the copies (default build/handout/)")
    student.set_defaults(func=_student)

    cache = commands.add_parser("cache", help="list, size or prune the embedding cache (.cache/ or ISOLIB_CACHE_DIR)")
    cache.add_argument("action", choices=("list", "size", "prune", "verify"),
                       help="verify: hash every file of every entry against its manifest, setting damaged ones aside")
    cache.add_argument("--older-than", type=number_option("DAYS"), metavar="DAYS",
                       help="prune: entries not used for DAYS days (a number of at least 0)")
    cache.add_argument("--model", help="prune: entries of this model (name or Hub id)")
    cache.add_argument("--folder", action="append", metavar="NAME",
                       help="prune: the entry in this folder (the last column of `cache list`); repeat for several")
    cache.add_argument("--all", action="store_true", help="prune: every entry")
    cache.add_argument("--dry-run", action="store_true", help="prune: list what would be deleted, delete nothing")
    cache.set_defaults(func=_cache)

    from isolib.card.settings import CORPORA, DEFAULT_TOKEN_BUDGET, SPLITS, CardSettings

    card = commands.add_parser("card", help="an isotropy report card of one model: every measure per layer, the "
                               "attention sink, rogue dimensions, post-processing, LID, clusters and STS-B, judged "
                               "(card.md and card.html, default build/cards/MODEL/)")
    card.add_argument("model", help="an offline model (minilm, mpnet, smollm2, glove-50d), a model folder or a Hub id")
    card.add_argument("--token-budget", type=int, default=DEFAULT_TOKEN_BUDGET, metavar="N",
                      help=f"about N tokens of running text in windows drawn at random (default {DEFAULT_TOKEN_BUDGET}: "
                           "16 windows of 512 tokens, as notebooks 02 and 05's quick runs, whose embeddings it reuses)")
    card.add_argument("--out", metavar="DIR", help="the card's folder (default build/cards/MODEL/)")
    card.add_argument("--corpus", choices=CORPORA, default="ptb", help="running text (default ptb)")
    card.add_argument("--split", choices=SPLITS, default="train", help="its split (default train)")
    card.add_argument("--points", type=int, default=CardSettings.n_points, metavar="N",
                      help=f"word tokens per sample, each layer measured on {CardSettings.n_replicates} samples "
                           f"(default {CardSettings.n_points})")
    card.add_argument("--sts-pairs", type=int, default=0, metavar="N", help="STS-B dev pairs scored (default 0: all)")
    card.add_argument("--static-baseline", choices=("glove-50d", "none"), default="glove-50d",
                      help="static vectors measured on the words of the same windows (default glove-50d)")
    card.add_argument("--resamples", type=int, default=CardSettings.n_resamples, metavar="N",
                      help=f"bootstrap resamples of every interval (default {CardSettings.n_resamples})")
    card.add_argument("--jobs", type=int, default=-1, metavar="N",
                      help="layers measured at once in worker processes (default -1: one per core; 1: none)")
    card.add_argument("--device", default="cpu", help="torch device of the forward passes (default cpu)")
    card.set_defaults(func=_card)

    overview = commands.add_parser("overview", help="regenerate figures/README.md from the committed results.json records "
                                   "(a full run does it too)")
    overview.set_defaults(func=_overview)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (IsolibError, ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
