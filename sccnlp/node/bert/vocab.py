"""WordPiece vocabulary: train one with `tokenizers` or check a given `vocab.txt`, and load the fast tokenizer."""

from __future__ import annotations

import os
import shutil
import tempfile
import unicodedata
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sccnlp.node.errors import SccError

# BERT's special tokens. DATA_FORMAT.md fixes [PAD] = 0; the others are looked up by name in the vocabulary.
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
MAX_VOCAB = 65536  # token ids are stored as uint16


def read_vocab(path: str | os.PathLike[str]) -> list[str]:
    """Tokens of a vocab.txt (one a line), checked for the BERT special tokens and the uint16 id range."""
    file = Path(path)
    if not file.is_file():
        raise SccError(f"vocabulary file {file} does not exist: give an existing vocab.txt (one token a line) or "
                       "leave the vocabulary unset to train one from the corpus")
    tokens = file.read_text(encoding="utf-8").splitlines()
    while tokens and not tokens[-1].strip():
        tokens.pop()
    if not tokens:
        raise SccError(f"vocabulary file {file} is empty: give a vocab.txt with one token a line")
    if tokens[0] != "[PAD]":
        raise SccError(f"vocabulary file {file} starts with {tokens[0]!r}, the shard format needs [PAD] as token 0 "
                       "(BERT order: [PAD] [UNK] [CLS] [SEP] [MASK] ...): use a BERT vocab.txt")
    missing = [t for t in SPECIAL_TOKENS if t not in tokens]
    if missing:
        raise SccError(f"vocabulary file {file} lacks the special token(s) {' '.join(missing)}: use a BERT vocab.txt")
    if len(tokens) > MAX_VOCAB:
        raise SccError(f"vocabulary file {file} has {len(tokens)} tokens, the shard format stores ids as uint16 "
                       f"(at most {MAX_VOCAB}): use a smaller vocabulary")
    return tokens


def check_vocab_size(path: str | os.PathLike[str], tokens: Sequence[str], expected: int) -> None:
    """A given vocabulary must have exactly the size the model is configured for (`expected` > 0)."""
    if expected and len(tokens) != expected:
        raise SccError(f"vocabulary size mismatch: {path} has {len(tokens)} tokens but the vocabulary size is set "
                       f"to {expected} (bert_vocab_size / --vocab-size): set it to {len(tokens)} or give the "
                       "vocab.txt the model was configured for")


def _normalizer(lowercase: bool) -> Any:
    """The normalizer of BertWordPieceTokenizer (training and encoding use the same settings)."""
    from tokenizers.normalizers import BertNormalizer

    return BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=lowercase)


def _is_isolated(char: str) -> bool:
    """Characters BERT's pre-tokenizer always makes a word of their own (punctuation, CJK): they get no `##` form."""
    code = ord(char)
    return unicodedata.category(char).startswith("P") or 33 <= code <= 47 or 58 <= code <= 64 or \
        91 <= code <= 96 or 123 <= code <= 126 or 0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or \
        0x20000 <= code <= 0x2FA1F or 0xF900 <= code <= 0xFAFF


def corpus_alphabet(corpus: str | os.PathLike[str], lowercase: bool, limit: int, block: int = 1 << 22) -> list[str]:
    """The `limit` most frequent characters of the normalised corpus, ties by code point, sorted by code point."""
    normalizer = _normalizer(lowercase)
    counts: Counter[str] = Counter()
    with open(corpus, encoding="utf-8", errors="replace") as handle:
        while lines := handle.readlines(block):
            counts.update(normalizer.normalize_str("".join(lines)))
    ranked = sorted((c for c in counts if not c.isspace()), key=lambda c: (-counts[c], c))
    return sorted(ranked[:limit])


def train_vocab(corpus: str | os.PathLike[str], vocab_size: int, lowercase: bool, out_file: str | os.PathLike[str],
                min_frequency: int = 2, limit_alphabet: int = 1000) -> list[str]:
    """Train a WordPiece vocabulary of `vocab_size` tokens on `corpus`; write it atomically to `out_file`.

    The same corpus and settings give the same vocab.txt, byte for byte. `tokenizers`' trainer alone does not: it
    numbers the `##x` tokens in hash-map order (random each process, even each call) and breaks ties between equally
    frequent merges by those numbers, so the token ids and sometimes the tokens differ between runs
    (huggingface/tokenizers#1794). Here the alphabet is computed first (deterministic ties) and its `##x` tokens are
    given to the trainer in sorted order, right after the special tokens, so every id the trainer compares is fixed.
    """
    if vocab_size < len(SPECIAL_TOKENS) + 100 or vocab_size > MAX_VOCAB:
        raise SccError(f"vocabulary size {vocab_size} is out of range: choose between {len(SPECIAL_TOKENS) + 100} "
                       f"and {MAX_VOCAB} (8192 for the demo, 30522 like BERT)")
    from tokenizers import BertWordPieceTokenizer

    alphabet = corpus_alphabet(corpus, lowercase, limit_alphabet)
    continuing = [f"##{c}" for c in alphabet if not _is_isolated(c)]
    base = len(SPECIAL_TOKENS) + len(alphabet) + len(continuing)
    if base > vocab_size:
        raise SccError(f"vocabulary size {vocab_size} is smaller than the {base} special tokens and characters "
                       f"(with their ## forms) of {corpus}: choose a vocabulary size above {base}")
    tokenizer = BertWordPieceTokenizer(clean_text=True, handle_chinese_chars=True, strip_accents=None,
                                       lowercase=lowercase)
    tokenizer.train(files=[str(corpus)], vocab_size=vocab_size, min_frequency=min_frequency,
                    limit_alphabet=len(alphabet), initial_alphabet=alphabet,
                    special_tokens=[*SPECIAL_TOKENS, *continuing], show_progress=False, wordpieces_prefix="##")
    out = Path(out_file)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".vocab-") as tmp:
        tokenizer.save_model(tmp)
        written = Path(tmp) / "vocab.txt"
        tokens = read_vocab(written)
        shutil.move(str(written), out.with_suffix(".tmp"))
        os.replace(out.with_suffix(".tmp"), out)
    return tokens


def load_tokenizer(vocab_file: str | os.PathLike[str], lowercase: bool) -> Any:
    """The fast (Rust) BERT WordPiece tokenizer over `vocab_file`."""
    from tokenizers import BertWordPieceTokenizer

    return BertWordPieceTokenizer(str(vocab_file), clean_text=True, handle_chinese_chars=True, strip_accents=None,
                                  lowercase=lowercase)


def encode_sentences(tokenizer: Any, sentences: Sequence[str], batch: int = 8192) -> list[list[int]]:
    """Token ids of each sentence (no special tokens), encoded in batches."""
    ids: list[list[int]] = []
    for start in range(0, len(sentences), batch):
        encodings = tokenizer.encode_batch(list(sentences[start:start + batch]), add_special_tokens=False)
        ids.extend(enc.ids for enc in encodings)
    return ids
