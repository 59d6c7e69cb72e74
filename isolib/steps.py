"""Stored steps: long deterministic results computed once and reused, keyed by their inputs and their computation.

:func:`memoized` stores the value of a step (a row of notebook 03's table, one fine-tuning run, one layer's
statistics) in ``<cache root>/results/<name>/<key>.jsonl``, so a run stopped half-way (or a session that
ends) resumes with the steps it finished. Values are stored as data that cannot run code
(:func:`encode_value`: JSON, arrays as raw bytes) behind a size and SHA-256 header; the key hashes the
inputs by content and what the code computes (:mod:`isolib.computation`), never its prose.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import importlib
import json
import os
import pickle
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd

from isolib.computation import computation_digest
from isolib.integrity import (
    cache_root,
    disk_full_error,
    is_disk_full,
    one_sentence_os_errors,
    set_aside,
)

__all__ = ["RESULTS_FOLDER", "memoized", "encode_value", "decode_value"]

# Under the cache root, beside "embeddings": the stored values of :func:`memoized`, one folder per name.
RESULTS_FOLDER = "results"
# Version of the stored results' layout (:func:`memoized`): header line, then the encoded value.
RESULT_FORMAT = 1
RESULT_SUFFIX = ".jsonl"


def _feed(digest, value) -> None:
    """Add ``value`` to a hash, by content: arrays by dtype, shape and bytes; containers item by item."""
    if isinstance(value, np.ndarray):
        contiguous = np.ascontiguousarray(value)
        digest.update(f"ndarray{contiguous.dtype.str}{contiguous.shape}".encode())
        digest.update(contiguous.view(np.uint8).reshape(-1) if contiguous.dtype != object else pickle.dumps(contiguous))
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        digest.update(type(value).__qualname__.encode())
        _feed(digest, {field.name: getattr(value, field.name) for field in dataclasses.fields(value)})
    elif isinstance(value, dict):
        digest.update(b"dict")
        for key in sorted(value, key=str):
            _feed(digest, str(key))
            _feed(digest, value[key])
    elif isinstance(value, (list, tuple)):
        digest.update(f"{type(value).__name__}{len(value)}".encode())
        for item in value:
            _feed(digest, item)
    elif value is None or isinstance(value, (str, int, float, bool, np.integer, np.floating)):
        digest.update(f"{type(value).__name__}:{value!r}".encode())
    else:
        raise TypeError(f"memoized cannot hash an input of type {type(value).__name__}.")


# Stored results are JSON: lists are JSON arrays, every other container a JSON object tagged by "$".
# Decoding builds only these types (and dataclasses of isolib), so a stored file can never run code.
_TAG = "$"


def _encode_array(array: np.ndarray) -> dict:
    if array.dtype == object:
        return {_TAG: "ndarray", "dtype": "object", "shape": list(array.shape),
                "items": [encode_value(item) for item in array.reshape(-1)]}
    if array.dtype.kind == "V" or array.dtype.hasobject:
        raise TypeError(f"memoized cannot store an array of dtype {array.dtype}.")
    contiguous = np.ascontiguousarray(array)
    return {_TAG: "ndarray", "dtype": contiguous.dtype.str, "shape": list(contiguous.shape),
            "data": base64.b64encode(contiguous.tobytes()).decode("ascii")}


def _decode_array(node: dict) -> np.ndarray:
    shape = tuple(int(n) for n in node["shape"])
    if node["dtype"] == "object":
        array = np.empty(len(node["items"]), dtype=object)
        array[:] = [decode_value(item) for item in node["items"]]  # slice assignment: items stay whole
        return array.reshape(shape)
    dtype = np.dtype(node["dtype"])
    if dtype.hasobject or dtype.kind == "V":
        raise ValueError(f"a stored array of dtype {dtype} is not allowed")
    return np.frombuffer(base64.b64decode(node["data"], validate=True), dtype=dtype).reshape(shape).copy()


def _encode_values(values) -> dict:
    """A column's or an index's values, dtype included (numpy, categorical, string or another pandas dtype)."""
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return {_TAG: "categorical", "codes": _encode_array(np.asarray(values.codes)),
                "categories": _encode_index(dtype.categories), "ordered": bool(dtype.ordered)}
    if isinstance(dtype, pd.StringDtype):
        return {_TAG: "strings", "storage": dtype.storage, "na": "NA" if dtype.na_value is pd.NA else "nan",
                "items": [None if pd.isna(item) else str(item) for item in values]}
    if isinstance(dtype, np.dtype):
        return _encode_array(np.asarray(values))
    return {_TAG: "extension", "dtype": str(dtype),
            "items": [{_TAG: "NA"} if item is pd.NA else encode_value(item) for item in values]}


def _decode_values(node: dict):
    kind = node[_TAG]
    if kind == "categorical":
        return pd.Categorical.from_codes(_decode_array(node["codes"]),
                                         dtype=pd.CategoricalDtype(_decode_index(node["categories"]),
                                                                   ordered=bool(node["ordered"])))
    if kind == "strings":
        dtype = pd.StringDtype(node["storage"], na_value=pd.NA if node["na"] == "NA" else np.nan)
        return pd.array([dtype.na_value if item is None else str(item) for item in node["items"]], dtype=dtype)
    if kind == "extension":
        items = [pd.NA if isinstance(item, dict) and item.get(_TAG) == "NA" else decode_value(item)
                 for item in node["items"]]
        return pd.array(items, dtype=pd.api.types.pandas_dtype(node["dtype"]))
    return _decode_array(node)


def _encode_index(index: pd.Index) -> dict:
    if isinstance(index, pd.RangeIndex):
        return {_TAG: "range", "start": index.start, "stop": index.stop, "step": index.step,
                "name": encode_value(index.name)}
    if isinstance(index, pd.MultiIndex):
        return {_TAG: "multiindex", "levels": [_encode_index(level) for level in index.levels],
                "codes": [_encode_array(np.asarray(codes)) for codes in index.codes],
                "names": [encode_value(name) for name in index.names]}
    return {_TAG: "index", "values": _encode_values(index.array if not isinstance(index.dtype, np.dtype)
                                                     else index.to_numpy()),
            "name": encode_value(index.name)}


def _decode_index(node: dict) -> pd.Index:
    kind = node[_TAG]
    if kind == "range":
        return pd.RangeIndex(int(node["start"]), int(node["stop"]), int(node["step"]), name=decode_value(node["name"]))
    if kind == "multiindex":
        return pd.MultiIndex(levels=[_decode_index(level) for level in node["levels"]],
                             codes=[_decode_array(codes) for codes in node["codes"]],
                             names=[decode_value(name) for name in node["names"]])
    if kind != "index":
        raise ValueError(f"a stored index of kind {kind!r} is not allowed")
    values = _decode_values(node["values"])
    return pd.Index(values, dtype=values.dtype, name=decode_value(node["name"]))


def encode_value(value):
    """A JSON-ready form of a stored result that :func:`decode_value` turns back into an equal value.

    Types kept exactly: None, bool, int, float, str, numpy scalars and arrays (bytes and dtype),
    lists, tuples, dicts (any of these as keys), pandas DataFrames, Series and Indexes (dtypes, index
    and names included) and dataclasses defined in :mod:`isolib`.

    Raises
    ------
    TypeError
        For any other type, which :func:`memoized` then cannot store.
    """
    if value is None or isinstance(value, (bool, str)) or type(value) is int:
        return value
    if type(value) is float:
        return {_TAG: "float", "hex": value.hex()}  # exact, NaN and infinities included
    if isinstance(value, np.generic):
        return {_TAG: "scalar", "array": _encode_array(np.asarray(value).reshape(1))}
    if isinstance(value, np.ndarray):
        return _encode_array(value)
    if type(value) is list:
        return [encode_value(item) for item in value]
    if type(value) is tuple:
        return {_TAG: "tuple", "items": [encode_value(item) for item in value]}
    if type(value) is dict:
        return {_TAG: "dict", "items": [[encode_value(key), encode_value(item)] for key, item in value.items()]}
    if isinstance(value, pd.DataFrame):
        return {_TAG: "dataframe", "columns": _encode_index(value.columns), "index": _encode_index(value.index),
                "data": [_encode_values(value.iloc[:, i].array if not isinstance(value.dtypes.iloc[i], np.dtype)
                                        else value.iloc[:, i].to_numpy()) for i in range(value.shape[1])],
                "attrs": encode_value(dict(value.attrs))}
    if isinstance(value, pd.Series):
        return {_TAG: "series", "values": _encode_values(value.array if not isinstance(value.dtype, np.dtype)
                                                         else value.to_numpy()),
                "index": _encode_index(value.index), "name": encode_value(value.name),
                "attrs": encode_value(dict(value.attrs))}
    if isinstance(value, pd.Index):
        return _encode_index(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        kind = type(value)
        if not kind.__module__.split(".")[0] == "isolib" or not all(field.init for field in dataclasses.fields(value)):
            raise TypeError(f"memoized can only store dataclasses of isolib, not {kind.__module__}.{kind.__qualname__}.")
        return {_TAG: "dataclass", "module": kind.__module__, "qualname": kind.__qualname__,
                "fields": {field.name: encode_value(getattr(value, field.name)) for field in dataclasses.fields(value)}}
    raise TypeError(f"memoized cannot store a value of type {type(value).__name__}.")


def decode_value(node):
    """The value :func:`encode_value` encoded; ValueError (or KeyError, TypeError) for anything else."""
    if node is None or isinstance(node, (bool, str, int)):
        return node
    if isinstance(node, list):
        return [decode_value(item) for item in node]
    if not isinstance(node, dict):
        raise ValueError(f"a stored {type(node).__name__} is not allowed")
    kind = node[_TAG]
    if kind == "float":
        return float.fromhex(node["hex"])
    if kind == "scalar":
        return _decode_array(node["array"])[0]
    if kind == "ndarray":
        return _decode_array(node)
    if kind == "tuple":
        return tuple(decode_value(item) for item in node["items"])
    if kind == "dict":
        return {decode_value(key): decode_value(item) for key, item in node["items"]}
    if kind == "dataframe":
        columns = _decode_index(node["columns"])
        frame = pd.DataFrame({i: _decode_values(data) for i, data in enumerate(node["data"])},
                             index=_decode_index(node["index"]))
        frame.columns = columns
        frame.attrs.update(decode_value(node["attrs"]))
        return frame
    if kind == "series":
        series = pd.Series(_decode_values(node["values"]), index=_decode_index(node["index"]),
                           name=decode_value(node["name"]))
        series.attrs.update(decode_value(node["attrs"]))
        return series
    if kind in ("range", "multiindex", "index"):
        return _decode_index(node)
    if kind == "dataclass":
        module, qualname = str(node["module"]), str(node["qualname"])
        if module.split(".")[0] != "isolib":
            raise ValueError(f"a stored dataclass of {module} is not allowed")
        kind_class = importlib.import_module(module)  # a module of isolib: code this process already trusts
        for part in qualname.split("."):
            kind_class = getattr(kind_class, part)
        if not (isinstance(kind_class, type) and dataclasses.is_dataclass(kind_class)):
            raise ValueError(f"{module}.{qualname} is not a dataclass")
        return kind_class(**{name: decode_value(item) for name, item in node["fields"].items()})
    raise ValueError(f"a stored value of kind {kind!r} is not allowed")


def _read_result(path: Path):
    """The value stored at ``path``; ValueError (with why) if the file disagrees with its header or cannot be decoded."""
    data = path.read_bytes()
    header_line, _, payload = data.partition(b"\n")
    try:
        header = json.loads(header_line)
        size, sha256 = int(header["size"]), str(header["sha256"])
        if header["format"] != RESULT_FORMAT:
            raise ValueError(f"it has format {header['format']!r}, not {RESULT_FORMAT}")
    except (ValueError, KeyError, TypeError, RecursionError) as error:
        raise ValueError(f"its header is unreadable ({error})") from None
    if len(payload) != size:
        raise ValueError(f"it holds {len(payload)} bytes where {size} were written")
    if hashlib.sha256(payload).hexdigest() != sha256:
        raise ValueError("it does not match the checksum recorded when it was written")
    try:
        return decode_value(json.loads(payload))
    except Exception as error:  # whatever a damaged value makes the decoder raise (a RecursionError too): not trusted
        raise ValueError(f"it cannot be decoded ({type(error).__name__}: {error})") from None


def _write_result(path: Path, value) -> None:
    """Store ``value`` at ``path``: a header line (format, size, SHA-256) then the encoded value, written aside."""
    payload = json.dumps(encode_value(value), separators=(",", ":"), allow_nan=False).encode()
    header = json.dumps({"format": RESULT_FORMAT, "size": len(payload), "sha256": hashlib.sha256(payload).hexdigest()})
    partial = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex[:8]}")
    try:
        partial.write_bytes(header.encode() + b"\n" + payload)
        os.replace(partial, path)
    except OSError as error:
        partial.unlink(missing_ok=True)
        if is_disk_full(error):
            raise disk_full_error(path.parent, len(header) + 1 + len(payload)) from None
        raise


def memoized(name: str, inputs: dict, compute: Callable[[], object], *, code: Sequence[ModuleType],
             store: bool = True) -> object:
    """``compute()``, or the value it returned before for the same inputs and code.

    For long deterministic steps (a seeded clustering row, a fine-tuning run), so that a run stopped
    half-way resumes with the steps it finished. The value is stored in
    ``<cache root>/results/<name>/<key>.jsonl`` (:func:`encode_value`: data only, never code, behind a
    header with its size and SHA-256), written aside and renamed (an interrupted write leaves
    nothing trusted); ``key`` hashes ``inputs`` by content and what the ``code`` modules compute
    (:func:`isolib.computation.computation_digest`: their code and the library code they import, never
    their docstrings or comments), so editing the code that computes a value recomputes it and editing
    its prose does not. A stored value that fails its checks or cannot be decoded is set aside
    (``<key>.jsonl.damaged-<id>``) and computed again, with one :class:`CacheWarning`; a value pickled by
    an older version (``<key>.pkl``) is never read, only replaced.

    Parameters
    ----------
    name : str
        The kind of step (a folder of the cache: ``cache list`` shows one entry per name).
    inputs : dict
        Everything the value depends on besides the code: arrays, dataclasses, numbers, strings, and
        lists or dicts of them (seeds included; a model by its weights fingerprint).
    compute : callable
        Called without arguments when no stored value matches; it returns what :func:`encode_value` takes.
    code : sequence of module
        The modules (or packages) that compute the value; the library modules they import count too.
    store : bool
        False: only ``compute()``, nothing read or written (a caller's ``resume=False``).

    Raises
    ------
    TypeError
        If an input cannot be hashed, or the computed value cannot be stored.
    CacheError
        If the stored value cannot be read or written (a read-only cache, a folder where its file belongs).
    """
    if not store:
        return compute()
    digest = hashlib.sha256()
    _feed(digest, inputs)
    digest.update(computation_digest(code).encode())
    folder = cache_root() / RESULTS_FOLDER / name
    key = digest.hexdigest()[:32]
    path = folder / f"{key}{RESULT_SUFFIX}"
    with one_sentence_os_errors():
        try:
            return _read_result(path)
        except FileNotFoundError:
            pass
        except ValueError as problem:
            set_aside(path, str(problem))
    value = compute()
    with one_sentence_os_errors():
        folder.mkdir(parents=True, exist_ok=True)
        _write_result(path, value)
        (folder / f"{key}.pkl").unlink(missing_ok=True)  # a pickle of an older version: never read, now replaced
    return value

