"""Running text cut into windows, and the placeholder tokens of a corpus: one procedure for every study.

Cai et al. (2021) fed a language-modelling corpus to each model as one token stream cut into
non-overlapping windows of the model's length. :func:`running_text_windows` is that procedure
(notebook 02 documents it in full: each line tokenised on its own, windows of ``window_length``
tokens special tokens included, never splitting a word, the short last window dropped, a random
draw of windows up to a token budget). Every study that reads running text calls it with the same
arguments, so it gets the same windows, hence the same embedding cache entries
(:mod:`isolib.embed` keys them by their texts): notebook 05 reads the embeddings notebook 02 caches.

:func:`placeholder_mask` finds the pieces of PTB's placeholders ``<unk>`` (a rare word) and ``N``
(a number), however a tokenizer splits them: tokens of the preprocessing, not of the language.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from isolib._checks import check_int, rng, sample_rows

__all__ = ["running_text_windows", "PLACEHOLDERS", "placeholder_mask"]


def _word_starts(stream: str, offsets: np.ndarray) -> np.ndarray:
    """Whether each piece begins a whitespace-separated word of ``stream``."""
    codes = np.frombuffer(stream.encode("utf-32-le"), dtype=np.uint32)
    space = np.isin(codes, [ord(c) for c in " \t\n\r\x0b\x0c\xa0"])
    starts = offsets[:, 0]
    # A piece begins a word if a space precedes it or (byte-level BPE: "Ġword") its own span starts with one.
    first = (starts == 0) | space[np.maximum(starts - 1, 0)] | space[np.minimum(starts, len(codes) - 1)]
    # Pieces of one character (byte fallback) share its offsets: only the first begins the word.
    first[1:] &= starts[1:] != starts[:-1]
    first[0] = True
    return first


def running_text_windows(lines: Sequence[str], tokenizer, *, window_length: int = 512, token_budget: int | None = None,
                         random_state=None) -> pd.DataFrame:
    """A corpus as the authors fed it: one token stream cut into non-overlapping windows.

    See the module docstring for the rule (notebook 02 describes it in full).

    Parameters
    ----------
    lines : sequence of str
        The split's lines in order (e.g. ``isolib.datasets.load_corpus("ptb", split="train").text``).
    tokenizer
        The model's fast tokenizer (``LoadedModel.tokenizer``).
    window_length : int
        Tokens per window, special tokens included (the authors: 512).
    token_budget : int or None
        About how many tokens to keep: ``token_budget // window_length`` windows (at least one),
        drawn uniformly without replacement from all full windows and kept in corpus order.
        None keeps every window.
    random_state : None, int or numpy Generator
        Seed of the window draw.

    Returns
    -------
    pandas.DataFrame, one row per kept window
        ``window`` (int, index among all full windows of the split), ``text`` (str, what the model
        reads), ``first_piece`` (int, index of its first piece in the stream), ``n_pieces`` (int,
        tokens when the text is tokenized with special tokens, at most ``window_length``).
        ``DataFrame.attrs["n_windows"]`` holds the number of full windows the split makes and
        ``attrs["n_pieces"]`` the pieces of the whole stream.

    Raises
    ------
    ValueError
        If the stream is shorter than one window or ``window_length`` leaves no room for content.
    """
    window_length = check_int(window_length, "window_length", low=2)
    n_special = tokenizer.num_special_tokens_to_add(pair=False)
    content = window_length - n_special
    if content < 1:
        raise ValueError(f"window_length={window_length} leaves no room beside the {n_special} special tokens.")
    lines = [line.strip() for line in lines if line.strip()]
    stream = " ".join(lines)
    # Each line tokenised on its own (as the authors did; faster in a batch), offsets moved into the stream.
    encoding = tokenizer(lines, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    line_starts = np.cumsum([0] + [len(line) + 1 for line in lines[:-1]])
    offsets = np.concatenate([np.asarray(line, dtype=np.int64).reshape(-1, 2) + start
                              for line, start in zip(encoding["offset_mapping"], line_starts)])
    n_pieces = len(offsets)
    if n_pieces < content:
        raise ValueError(f"The text has {n_pieces} tokens, fewer than one window of {window_length}; "
                         "pass more lines or a shorter window_length.")
    starts = _word_starts(stream, offsets)
    # For each piece, the index of the piece that begins its word.
    word_begin = np.maximum.accumulate(np.where(starts, np.arange(n_pieces), 0))
    bounds, first = [], 0
    while first + content <= n_pieces:  # a shorter last window is dropped, as the authors did
        end = first + content
        if end < n_pieces and word_begin[end] > first:  # never split a word between two windows
            end = word_begin[end]
        bounds.append((first, end))
        first = end
    chosen = np.arange(len(bounds))
    if token_budget is not None:
        n_windows = max(1, check_int(token_budget, "token_budget", low=1) // window_length)
        chosen = sample_rows(len(bounds), n_windows, rng(random_state))
    records = []
    for index in chosen:
        first, end = bounds[index]
        piece_ends = np.flatnonzero(starts[first + 1:end]) + first + 1  # later word starts inside the window
        while True:
            text = stream[offsets[first, 0]:offsets[end - 1, 1]].strip()
            length = len(tokenizer(text, add_special_tokens=True, verbose=False)["input_ids"])
            if length <= window_length or not len(piece_ends):
                break
            end, piece_ends = piece_ends[-1], piece_ends[:-1]  # drop the last word and try again
        records.append((int(index), text, int(first), length))
    windows = pd.DataFrame(records, columns=["window", "text", "first_piece", "n_pieces"])
    windows.attrs.update(n_windows=len(bounds), n_pieces=n_pieces)
    return windows


# PTB's placeholders (Mikolov's preprocessing): ``<unk>`` for a rare word, ``N`` for a number. WikiText-2 has
# ``<unk>`` too. They are tokens of the preprocessing, not of the language.
PLACEHOLDERS = ("<unk>", "N")


def placeholder_mask(tokens: pd.DataFrame, placeholders: Sequence[str] = PLACEHOLDERS) -> np.ndarray:
    """Which tokens are pieces of a corpus placeholder (``<unk>``, ``N``), however the tokenizer split it.

    A word of the token table (``word``, from the tokenizer's ``word_ids``) is a placeholder when its
    text is one, or when consecutive words of one window spell one (BERT's pre-tokenizer splits
    ``<unk>`` into the words ``<``, ``unk``, ``>``, read as the pieces ``<``, ``un``, ``##k``, ``>``).
    The match is case-sensitive: PTB is lower-cased, so ``N`` is always its number token (MiniLM
    lower-cases it to the piece ``n``).

    Parameters
    ----------
    tokens : pandas.DataFrame
        ``Embeddings.tokens`` (``sentence_id``, ``word_id``, ``word``, ``is_special``).
    placeholders : sequence of str

    Returns
    -------
    ndarray of bool, shape (n_tokens,)
    """
    special = tokens.is_special.to_numpy(dtype=bool)
    words = tokens.loc[~special, ["sentence_id", "word_id", "word"]].drop_duplicates(["sentence_id", "word_id"])
    words = words.reset_index(drop=True)
    flagged = words.word.isin(placeholders).to_numpy().copy()
    for placeholder in placeholders:  # words that spell it together, e.g. "<" + "unk" + ">"
        text = words.word.to_numpy(dtype=object)
        window = words.sentence_id.to_numpy()
        for length in range(2, len(placeholder) + 1):
            if len(text) < length:
                break
            starts = np.arange(len(text) - length + 1)
            joined = text[starts]
            same_window = np.ones(len(starts), dtype=bool)
            for offset in range(1, length):
                joined = joined + text[starts + offset]
                same_window &= window[starts + offset] == window[starts]
            hits = starts[(joined == placeholder) & same_window]
            for offset in range(length):
                flagged[hits + offset] = True
    keys = set(zip(words.sentence_id[flagged], words.word_id[flagged]))
    mask = np.zeros(len(tokens), dtype=bool)
    mask[~special] = [key in keys for key in zip(tokens.sentence_id[~special], tokens.word_id[~special])]
    return mask
