"""Tests of isolib.datasets against the real dataset files.

The data directory is ``$ISOLIB_DATA_DIR`` (CI points it at ``../shared/data``) or ``data/raw``.
Expected row counts are the measured counts recorded in each dataset's SOURCE.md.
"""

import gzip
import io
import os
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

from isolib import datasets
from isolib.errors import DataError

# A data directory named explicitly must hold the data (the tests then fail loudly where it does not);
# without one, a checkout that has not fetched anything skips.
if "ISOLIB_DATA_DIR" not in os.environ and not any(datasets.data_dir().glob("*/*")):
    pytest.skip(
        f"ISOLIB_DATA_DIR is unset and {datasets.data_dir()} holds no datasets: point ISOLIB_DATA_DIR at "
        "them (e.g. ../shared/data) or run `python -m isolib data fetch`",
        allow_module_level=True,
    )

ALL_NAMES = (
    "sts12 sts13 sts14 sts15 sts16 stsb sick snli ptb wikitext2 rt-polarity sst2 rte cola mrpc wic "
    "word-benchmarks wordnet"
).split()


# --------------------------------------------------------------------------- registry and locations


def test_registry_lists_every_dataset_with_provenance():
    assert datasets.DATASETS == tuple(ALL_NAMES)
    for name in datasets.DATASETS:
        entry = datasets._registry()[name]
        assert all(entry[key] for key in ("description", "licence", "citation", "source"))
        for file in entry["files"]:
            assert len(file["sha256"]) == 64 and file["bytes"] > 0
            assert file["url"] is None and file["note"] or file["url"].startswith("https://")
            assert file.get("archive") in (None, "zip", "gzip", "tar", "deb")
            assert file.get("transform") in (None, *datasets._TRANSFORMS)
            assert ("member" in file) == (file.get("archive") in ("zip", "tar", "deb"))


def test_data_dir_defaults_to_data_raw_in_the_repository(monkeypatch, tmp_path):
    monkeypatch.delenv("ISOLIB_DATA_DIR", raising=False)
    # Nothing recorded by `make data` and nothing beside the checkout (tests/test_data_folder.py has those).
    monkeypatch.setattr(datasets, "DATA_DIR_RECORD", tmp_path / ".isolib-data-dir")
    monkeypatch.setattr(datasets, "SHARED_DATA_DIR", tmp_path / "shared" / "data")
    assert datasets.data_dir() == Path(datasets.__file__).resolve().parents[1] / "data" / "raw"
    assert datasets.dataset_path("stsb") == datasets.data_dir() / "stsb"


@pytest.mark.parametrize("call", [datasets.verify, datasets.fetch, datasets.dataset_path])
def test_unknown_dataset_name_lists_the_valid_names(call):
    with pytest.raises(DataError, match=r"Unknown dataset 'sts17'; valid names are: sts12, .*, wordnet\."):
        call("sts17")


def test_every_registered_file_verifies():
    results = datasets.verify()
    assert len(results) == sum(len(datasets._registry()[name]["files"]) for name in ALL_NAMES)
    assert {result.status for result in results} == {"ok"}


# --------------------------------------------------------------------------- row counts

STS_ROWS = [
    ("sts12", None, True, 3108),
    ("sts13", None, True, 1500),
    ("sts14", None, True, 3750),
    ("sts15", None, True, 3000),
    ("sts15", None, False, 8500),
    ("sts16", None, True, 1186),
    ("sts16", None, False, 9183),
    ("stsb", "train", True, 5749),
    ("stsb", "dev", True, 1500),
    ("stsb", "test", True, 1379),
    ("sick", "train", True, 4500),
    ("sick", "trial", True, 500),
    ("sick", "test", True, 4927),
    ("sick", None, True, 9927),
]


@pytest.mark.parametrize(("name", "split", "scored_only", "rows"), STS_ROWS)
def test_load_sts_row_counts(name, split, scored_only, rows):
    frame = datasets.load_sts(name, split=split, scored_only=scored_only)
    assert len(frame) == rows
    assert list(frame.columns[:5]) == ["sentence1", "sentence2", "score", "subset", "split"]
    assert frame["score"].dtype == "float64"
    assert frame["score"].dropna().between(0, 5).all()
    assert (frame["sentence1"].str.len() > 0).all() and (frame["sentence2"].str.len() > 0).all()


def test_sts_subsets_come_from_the_file_names():
    assert datasets.load_sts("sts13")["subset"].value_counts().to_dict() == {"headlines": 750, "OnWN": 561, "FNWN": 189}
    counts = datasets.load_sts("sts15", scored_only=False)["subset"].value_counts()
    assert counts.to_dict() == {
        "answers-forums": 2000, "belief": 2000, "answers-students": 1500, "headlines": 1500, "images": 1500
    }
    genres = datasets.load_sts("stsb")["subset"].value_counts().to_dict()
    assert genres == {"main-news": 4299, "main-captions": 3250, "main-forums": 1079}  # as the STS-B readme counts


def test_stsb_rows_with_nine_fields_keep_only_the_sentences():
    test = datasets.load_sts("stsb", split="test")
    row = test[test["sentence1"].str.startswith("I remained under the banyan tree")].iloc[0]
    expected = "I remained under the banyan tree, exhausted by my daily ritual of herding the cats every two hours."
    assert row["sentence2"] == expected
    assert row["score"] == 3.0 and row["subset"] == "main-forums"


def test_sick_keeps_entailment_and_survives_crlf():
    sick = datasets.load_sts("sick")
    assert sick["entailment"].value_counts().to_dict() == {"NEUTRAL": 5611, "ENTAILMENT": 2857, "CONTRADICTION": 1459}
    assert sick["score"].between(1, 5).all()


PAIR_ROWS = [
    ("snli", "dev", True, 9842),
    ("snli", "dev", False, 10000),
    ("snli", "test", True, 9824),
    ("rte", "train", True, 2490),
    ("rte", "val", True, 277),
    ("rte", "test", True, 3000),
    ("mrpc", "train", True, 4076),
    ("mrpc", "test", True, 1725),
    ("wic", "train", True, 5428),
    ("wic", "dev", True, 638),
    ("wic", "test", True, 1400),
]


@pytest.mark.parametrize(("name", "split", "gold_only", "rows"), PAIR_ROWS)
def test_load_pairs_row_counts(name, split, gold_only, rows):
    frame = datasets.load_pairs(name, split=split, gold_only=gold_only)
    assert len(frame) == rows
    assert list(frame.columns[:4]) == ["sentence1", "sentence2", "label", "split"]


def test_pair_labels():
    snli = datasets.load_pairs("snli", split="dev", gold_only=False)
    assert snli["label"].isna().sum() == 158
    assert snli["label"].value_counts().to_dict() == {"entailment": 3329, "contradiction": 3278, "neutral": 3235}
    assert datasets.load_pairs("rte", split="test")["label"].isna().all()
    rte_labels = datasets.load_pairs("rte", split="train")["label"].value_counts().to_dict()
    assert rte_labels == {"entailment": 1249, "not_entailment": 1241}
    assert datasets.load_pairs("mrpc", split="train")["label"].sum() == 2753
    wic = datasets.load_pairs("wic", split="test")
    assert wic["label"].sum() == 700
    first = datasets.load_pairs("wic", split="train").iloc[0]
    assert (first["word"], first["pos"], first["index1"], first["index2"]) == ("carry", "V", 2, 1)
    assert first["sentence1"].split()[first["index1"]] == "carry"


TEXT_ROWS = [
    ("rt-polarity", "all", 10662, 5331),
    ("sst2", "train", 67349, 37569),
    ("sst2", "dev", 872, 444),
    ("sst2", "test", 1821, 909),
    ("cola", "in_domain_train", 8551, 6023),
    ("cola", "in_domain_dev", 527, 365),
    ("cola", "out_of_domain_dev", 516, 354),
]


@pytest.mark.parametrize(("name", "split", "rows", "positives"), TEXT_ROWS)
def test_load_texts_row_counts(name, split, rows, positives):
    frame = datasets.load_texts(name, split=split)
    assert list(frame.columns) == ["text", "label", "split"]
    assert (len(frame), frame["label"].sum()) == (rows, positives)
    assert not frame["text"].str.endswith(" ").any()


def test_rt_polarity_is_decoded_from_windows_1252():
    texts = datasets.load_texts("rt-polarity", split="all")["text"]
    assert texts[43].startswith("'compleja e intelectualmente retadora , el ladrón de orquídeas")
    assert texts.str.contains("—").sum() > 0 and not texts.str.contains("\ufffd|\u0085").any()


CORPUS_ROWS = [
    ("ptb", "train", 42068),
    ("ptb", "valid", 3370),
    ("ptb", "test", 3761),
    ("wikitext2", "train", 23767),
    ("wikitext2", "valid", 2461),
    ("wikitext2", "test", 2891),
]


@pytest.mark.parametrize(("name", "split", "rows"), CORPUS_ROWS)
def test_load_corpus_counts_non_empty_lines(name, split, rows):
    frame = datasets.load_corpus(name, split=split)
    assert list(frame.columns) == ["text"] and len(frame) == rows
    assert not frame["text"].str.contains("<eos>").any()


def test_wikitext_keeps_headings_and_ptb_token_count():
    assert datasets.load_corpus("wikitext2", split="valid")["text"][0] == "= Homarus gammarus ="
    assert datasets.load_corpus("ptb", split="train")["text"].str.split().str.len().sum() == 887521


@pytest.mark.parametrize(("name", "rows"), [("simlex999", 999), ("wordsim353", 353), ("men", 3000), ("rareword", 2034)])
def test_load_word_similarity(name, rows):
    frame = datasets.load_word_similarity(name)
    assert list(frame.columns) == ["word1", "word2", "score"] and len(frame) == rows
    assert frame["score"].dtype == "float64"


def test_simlex_skips_its_comment_header():
    assert datasets.load_word_similarity("simlex999").iloc[0].tolist() == ["old", "new", 1.58]


@pytest.mark.parametrize(("name", "rows", "sections"), [("google", 19544, 14), ("msr", 8000, 16)])
def test_load_analogy(name, rows, sections):
    frame = datasets.load_analogy(name)
    assert list(frame.columns) == ["a", "b", "c", "d", "section"]
    assert (len(frame), frame["section"].nunique()) == (rows, sections)


def test_google_analogy_sections():
    first = datasets.load_analogy("google").iloc[0].tolist()
    assert first == ["Athens", "Greece", "Baghdad", "Iraq", "capital-common-countries"]


def test_load_relational_similarity():
    frame = datasets.load_relational_similarity()
    assert (len(frame), frame["section"].nunique()) == (10014, 79)
    assert frame.iloc[0].tolist() == ["water", "drop", "hour", "seconds", "2c"]
    assert "capture" in set(frame["a"])  # written " capture" in the file


@pytest.mark.parametrize(("name", "rows", "categories"), [("ap", 402, 21), ("bless", 200, 17)])
def test_load_categorization_drops_empty_words(name, rows, categories):
    frame = datasets.load_categorization(name)
    assert (len(frame), frame["category"].nunique()) == (rows, categories)
    assert (frame["word"].str.len() > 0).all()


def test_load_wordnet_pos():
    frame = datasets.load_wordnet_pos()
    assert frame["pos"].value_counts().to_dict() == {"noun": 117798, "adjective": 21479, "verb": 11529, "adverb": 4481}
    assert set(frame.loc[frame["word"] == "run", "pos"]) == {"noun", "verb"}
    assert "ice_cream" in set(frame["word"])
    # index.noun: "guitar n 1 ...", "go n 4 ..."; index.verb: "go v 30 ...".
    senses = frame.set_index(["word", "pos"]).n_senses
    assert senses["guitar", "noun"] == 1 and senses["go", "noun"] == 4 and senses["go", "verb"] == 30
    assert (frame.n_senses >= 1).all()


def test_load_wordnet_supersenses():
    frame = datasets.load_wordnet_supersenses()
    assert len(frame) == 133552 and frame["word"].nunique() == 117798
    assert frame["supersense"].nunique() == 26 and frame["supersense"].str.startswith("noun.").all()
    assert "noun.animal" in set(frame.loc[frame["word"] == "dog", "supersense"])
    assert "aachen" in set(frame["word"])


@pytest.mark.parametrize(
    "call",
    [
        lambda: datasets.load_sts("snli"),
        lambda: datasets.load_sts("stsb", split="validation"),
        lambda: datasets.load_pairs("wic", split="val"),
        lambda: datasets.load_word_similarity("simlex"),
    ],
)
def test_bad_name_or_split_is_a_value_error(call):
    with pytest.raises(ValueError, match="must be one of"):
        call()


# --------------------------------------------------------------------------- verification of a local copy


@pytest.fixture
def sts13_copy(tmp_path, monkeypatch):
    """A private copy of sts13 as the whole data directory."""
    shutil.copytree(datasets.dataset_path("sts13"), tmp_path / "sts13")
    monkeypatch.setenv("ISOLIB_DATA_DIR", str(tmp_path))
    return tmp_path / "sts13"


def _flip_first_byte(path):
    data = bytearray(path.read_bytes())
    data[0] ^= 0x01
    path.write_bytes(bytes(data))


def test_corrupt_file_is_refused_with_the_fetch_command(sts13_copy):
    assert len(datasets.load_sts("sts13")) == 1500
    _flip_first_byte(sts13_copy / "STS.input.FNWN.txt")
    with pytest.raises(DataError) as error:
        datasets.load_sts("sts13")
    message = str(error.value)
    assert f"data folder {sts13_copy.parent} " in message and "'sts13' file sts13/STS.input.FNWN.txt" in message
    assert "corrupt" in message
    assert "`python -m isolib data fetch sts13`" in message


def test_missing_file_is_refused_with_the_fetch_command(sts13_copy):
    (sts13_copy / "STS.gs.OnWN.txt").unlink()
    expected = r"dataset 'sts13' file sts13/STS\.gs\.OnWN\.txt is missing; .* `python -m isolib data fetch sts13`"
    with pytest.raises(DataError, match=expected):
        datasets.load_sts("sts13")


def test_verify_reports_each_status(sts13_copy):
    _flip_first_byte(sts13_copy / "STS.input.OnWN.txt")
    (sts13_copy / "STS.gs.SMT.txt").unlink()
    statuses = {result.file: result.status for result in datasets.verify("sts13")}
    assert statuses.pop("STS.input.OnWN.txt") == "corrupt"
    assert statuses.pop("STS.gs.SMT.txt") == "missing"
    assert set(statuses.values()) == {"ok"}
    result = datasets.verify("sts13")[0]
    assert (result.dataset, result.path) == ("sts13", sts13_copy / result.file)


def test_repeated_loads_do_not_hash_again(sts13_copy):
    datasets.load_sts("sts13")
    misses = datasets._sha256.cache_info().misses
    datasets.load_sts("sts13")
    assert datasets._sha256.cache_info().misses == misses


@pytest.mark.parametrize("call", [lambda: datasets.verify("sts13"), lambda: datasets.load_sts("sts13"),
                                  lambda: datasets.fetch("sts13")])
def test_a_data_dir_that_is_a_file_is_refused_by_name(call, tmp_path, monkeypatch):
    file = tmp_path / "data"
    file.write_text("not a folder")
    monkeypatch.setenv("ISOLIB_DATA_DIR", str(file))
    with pytest.raises(DataError, match=f"^ISOLIB_DATA_DIR names {file}, which is a file, not a folder; set "):
        call()
    assert file.read_text() == "not a folder"


# --------------------------------------------------------------------------- fetch, against a fake server

SHARED = datasets.data_dir()


def _archive(kind, members):
    """An archive of ``kind`` holding ``members`` ({member path: bytes}), as the registry URL would serve."""
    buffer = io.BytesIO()
    if kind == "gzip":
        return gzip.compress(next(iter(members.values())), compresslevel=1)
    if kind == "zip":
        with zipfile.ZipFile(buffer, "w") as archive:
            for member, data in members.items():
                archive.writestr(member, data)
        return buffer.getvalue()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for member, data in members.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    if kind == "tar":
        return buffer.getvalue()
    # deb: an ar archive of debian-binary and data.tar; a 60-byte header (name, mtime, uid, gid, mode,
    # size, magic) precedes each member, padded to an even length.
    parts = [b"!<arch>\n"]
    for name, data in ((b"debian-binary", b"2.0\n"), (b"data.tar", buffer.getvalue())):
        header = name.ljust(16) + b"0".ljust(12) + b"0".ljust(6) * 2 + b"100644".ljust(8)
        parts += [header + str(len(data)).encode().ljust(10) + b"`\n", data, b"\n" * (len(data) % 2)]
    return b"".join(parts)


def _served_member(path, entry):
    """The bytes the registry URL serves for a file: the file itself, or for lexnames its manual page's table."""
    if entry.get("transform") != "lexnames-from-manpage":
        return path.read_bytes()
    rows = [line.split("\t") for line in path.read_text().splitlines()]
    return gzip.compress("".join(f"{number}\t{name}\tdescription of {name}\n" for number, name, _ in rows).encode())


@pytest.fixture
def server(monkeypatch, tmp_path):
    """Serve every registry URL from the shared files; return the list of URLs requested."""
    served = {}
    for name in ALL_NAMES:
        by_url = {}
        for entry in datasets._registry()[name]["files"]:
            if entry["url"]:
                by_url.setdefault(entry["url"], []).append(entry)
        for url, entries in by_url.items():
            kind = entries[0].get("archive")
            files = {entry.get("member"): _served_member(SHARED / name / entry["path"], entry) for entry in entries}
            served[url] = (kind, files)
    requested = []

    def fake_download(url):
        requested.append(url)
        kind, files = served[url]
        if kind is None:
            return next(iter(files.values()))
        return _archive(kind, files)

    monkeypatch.setattr(datasets, "_download", fake_download)
    monkeypatch.setenv("ISOLIB_DATA_DIR", str(tmp_path / "data"))
    return requested


def test_fetch_downloads_verifies_and_then_skips(server, capsys):
    paths = datasets.fetch("mrpc")
    assert [path.name for path in paths] == ["msr_paraphrase_test.txt", "msr_paraphrase_train.txt"]
    assert {result.status for result in datasets.verify("mrpc")} == {"ok"}
    assert capsys.readouterr().out.splitlines() == ["mrpc: 2 files downloaded (1453825 bytes)"]
    datasets.fetch("mrpc")
    assert len(server) == 2
    assert capsys.readouterr().out.splitlines() == ["mrpc: 2 files already present and verified"]
    (datasets.dataset_path("mrpc") / "msr_paraphrase_test.txt").unlink()
    datasets.fetch("mrpc")
    assert capsys.readouterr().out.splitlines() == [
        "mrpc: 1 file downloaded (431156 bytes), 1 already present and verified"]
    datasets.fetch("mrpc", force=True)
    assert len(server) == 5


@pytest.mark.parametrize("name", ["cola", "snli", "word-benchmarks"])
def test_fetch_extracts_members_of_archives(server, name):
    datasets.fetch(name)
    assert {result.status for result in datasets.verify(name)} == {"ok"}
    assert len(server) == len(set(server))  # each archive downloaded once


def test_fetch_from_debian_packages_builds_lexnames_from_its_manual_page(server):
    datasets.fetch("wordnet")
    assert {result.status for result in datasets.verify("wordnet")} == {"ok"}


def test_lexnames_are_read_from_the_table_of_the_manual_page():
    page = (".TS\nl l l.\n\\fBFile Number\\fP\t\\fBName\\fP\t\\fBContents\\fP\n_\n"
            "00\tadj.all\tall adjective clusters\n18\tnoun.person  \tnouns denoting people\n"
            "29\tverb.body\tverbs of grooming\n.TE\n")
    assert datasets._lexnames_from_manpage(gzip.compress(page.encode())) == b"00\tadj.all\t3\n18\tnoun.person\t1\n29\tverb.body\t2\n"


def test_fetch_refuses_a_download_with_the_wrong_hash(monkeypatch, tmp_path):
    monkeypatch.setattr(datasets, "_download", lambda url: b"not the file")
    monkeypatch.setenv("ISOLIB_DATA_DIR", str(tmp_path))
    expected = r"Downloaded rte/test\.jsonl from https://\S+ has sha256 [0-9a-f]{64}, not the registered"
    with pytest.raises(DataError, match=expected):
        datasets.fetch("rte")
    assert list(tmp_path.iterdir()) == []


def test_an_interrupted_write_leaves_no_file(server, monkeypatch, tmp_path):
    def interrupted(source, target):
        raise KeyboardInterrupt

    monkeypatch.setattr(datasets.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        datasets.fetch("rte")
    assert list((tmp_path / "data" / "rte").iterdir()) == []


def test_fetch_reports_a_missing_archive_member(monkeypatch, tmp_path):
    monkeypatch.setattr(datasets, "_download", lambda url: _archive("zip", {"elsewhere/README": b""}))
    monkeypatch.setenv("ISOLIB_DATA_DIR", str(tmp_path))
    with pytest.raises(DataError, match=r"Could not get cola/README from https://\S+cola_public_1\.1\.zip"):
        datasets.fetch("cola")


def test_sample_sentences_keeps_order_and_is_seeded():
    from isolib.datasets import sample_sentences

    sentences = [f"sentence {i}" for i in range(100)]
    sample = sample_sentences(sentences, 10, random_state=3)
    assert len(sample) == 10 and sample == sorted(sample, key=sentences.index)
    assert sample == sample_sentences(sentences, 10, random_state=3)
    with pytest.warns(UserWarning, match="all of them are taken"):
        assert sample_sentences(sentences, 0) == sentences == sample_sentences(sentences, 500)
