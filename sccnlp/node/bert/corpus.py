"""Pretraining corpus: one sentence a line, a blank line between documents (the layout Google's BERT reads).

`python -m sccnlp.node.bert.corpus build --from-debian-docs OUT.txt` turns installed Debian documentation (HTML) into
such a corpus; `python -m sccnlp.node.bert.corpus check PATH` validates one. `read_partition()` hands a worker its
documents by byte range, so every worker reads only its part of a large file and each document goes to exactly one.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from sccnlp.node.errors import SccError, json_command

# Installed documentation packages that give English prose: package -> (directory globs, file globs, excluded names).
DEBIAN_DOC_SOURCES: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "python3-doc": (("usr/share/doc/python3*/html",), ("**/*.html",),
                    ("genindex", "search.html", "py-modindex.html", "_sources", "_static", "changelog.html",
                     "copyright.html", "license.html", "bugs.html", "download.html", "contents.html")),
    "debian-reference-en": (("usr/share/debian-reference",), ("*.en.html",), ()),
    "debian-handbook": (("usr/share/doc/debian-handbook/html/en-US",), ("*.html",), ("index.html", "ix01.html")),
}
DEFAULT_PACKAGE = "python3-doc"


# --------------------------------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class CorpusStats:
    path: str
    bytes: int
    documents: int
    sentences: int


def check_corpus(path: str | os.PathLike[str]) -> CorpusStats:
    """Count documents and sentences; a missing, empty or document-less corpus is one SccError line."""
    file = Path(path)
    if not file.exists():
        raise SccError(f"corpus {file} does not exist: give a plain-text corpus (one sentence a line, a blank line "
                       "between documents), e.g. build one with `python -m sccnlp.node.bert.corpus build "
                       "--from-debian-docs OUT.txt`")
    if not file.is_file():
        raise SccError(f"corpus {file} is not a regular file: give the path of a plain-text corpus")
    size = file.stat().st_size
    docs = sentences = 0
    for doc in read_partition(file, 0, 1):
        docs += 1
        sentences += len(doc)
    if size == 0 or sentences == 0:
        raise SccError(f"corpus {file} is empty ({size} bytes, no sentences): give a corpus with text, one sentence "
                       "a line and a blank line between documents")
    return CorpusStats(str(file), size, docs, sentences)


def read_partition(path: str | os.PathLike[str], index: int, count: int) -> list[list[str]]:
    """Documents (lists of sentences) of partition `index` of `count`.

    The file is cut into `count` byte ranges; a document belongs to the range holding the blank line before it
    (the first document: range 0) and is read whole even past the range's end, so the partitions are disjoint and
    together hold every document, whatever the sizes of the ranges.
    """
    if not 0 <= index < count:
        raise ValueError(f"partition {index} of {count}")
    file = Path(path)
    size = file.stat().st_size
    start, end = index * size // count, (index + 1) * size // count
    docs: list[list[str]] = []
    current: list[str] = []
    with open(file, "rb") as handle:
        if start > 0:
            handle.seek(start - 1)
            pos = start - 1 + len(handle.readline())  # finish the line holding byte start-1: now at a line start
        else:
            pos = 0
        owned = start == 0
        for raw in iter(handle.readline, b""):
            if not raw.strip():
                if current:
                    docs.append(current)
                    current = []
                if pos >= end:
                    break
                owned = True
            elif owned:
                current.append(raw.decode("utf-8", errors="replace").strip())
            pos += len(raw)
    if current:
        docs.append(current)
    return docs


# --------------------------------------------------------------------------------------------------- HTML -> text

_BLOCK = {"p", "li", "dd", "dt", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "td", "th", "caption",
          "figcaption", "div", "section", "article", "tr", "ul", "ol", "dl", "table", "br", "body"}
_SKIP = {"script", "style", "pre", "head", "nav", "code-block", "svg", "math", "textarea", "select", "noscript"}
_SKIP_CLASSES = {"sphinxsidebar", "related", "footer", "navheader", "navfooter", "toc", "highlight", "breadcrumbs",
                 "headerlink", "toctree-wrapper", "docutils-literal-block", "literallayout", "programlisting",
                 "screen", "synopsis", "cmdsynopsis", "index", "mobile-nav", "sidebar"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_NEW_DOC = {"h1", "h2"}


class _ProseExtractor(HTMLParser):
    """Collects the text of prose blocks, skipping code, navigation and scripts; h1/h2 start a new document."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool]] = []  # (tag, skip)
        self.skip_depth = 0
        self.block: list[str] = []
        self.documents: list[list[str]] = [[]]

    def _flush(self) -> None:
        text = " ".join("".join(self.block).split())
        self.block = []
        if text:
            self.documents[-1].append(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = set()
        for key, value in attrs:
            if key == "class" and value:
                classes.update(value.split())
        if tag in _BLOCK:
            self._flush()
        if tag in _NEW_DOC and self.skip_depth == 0:
            self.documents.append([])
        if tag in _VOID:
            return
        skip = tag in _SKIP or bool(classes & _SKIP_CLASSES)
        self.stack.append((tag, skip))
        if skip:
            self.skip_depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _BLOCK:
            self._flush()
        if not any(t == tag for t, _unused in self.stack):
            return
        while self.stack:
            name, skip = self.stack.pop()
            if skip:
                self.skip_depth -= 1
            if name == tag:
                break

    def handle_data(self, data: str) -> None:
        if self.skip_depth == 0:
            self.block.append(data)

    def close(self) -> None:
        super().close()
        self._flush()


_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "Mr.", "Mrs.", "Dr.", "Fig.", "No.", "approx.", "resp.")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_CODEY = re.compile(r"[{}<>=;$\\|_#@~^`]|::|->|\(\)|\.\w+\(|\*\w")
_ENDS_SENTENCE = re.compile(r"[.!?:][\"')\]]*$")


def split_sentences(text: str) -> list[str]:
    """Split a paragraph into sentences (regex on end punctuation, common abbreviations protected)."""
    protected = text
    for i, abbr in enumerate(_ABBREVIATIONS):
        protected = protected.replace(abbr, f"\x00{i}\x00")
    parts = _SENTENCE_END.split(protected)
    out = []
    for part in parts:
        for i, abbr in enumerate(_ABBREVIATIONS):
            part = part.replace(f"\x00{i}\x00", abbr)
        part = part.strip()
        if part:
            out.append(part)
    return out


def is_prose(sentence: str, min_words: int = 5) -> bool:
    """Drop headings, fragments and lines of code: enough words, mostly letters, few code symbols."""
    words = sentence.split()
    if len(words) < min_words or len(sentence) > 2000:
        return False
    letters = sum(c.isalpha() for c in sentence)
    if letters < 0.6 * len(sentence.replace(" ", "")):
        return False
    if len(_CODEY.findall(sentence)) > max(2, len(words) // 8):
        return False
    if not _ENDS_SENTENCE.search(sentence):
        return False  # headings, table cells, signatures
    return sentence[0].isalnum() or sentence[0] in "\"'("


def html_to_documents(html: str, min_sentences: int = 2) -> list[list[str]]:
    """Prose sentences of an HTML page, one document per h1/h2 section."""
    parser = _ProseExtractor()
    parser.feed(html)
    parser.close()
    docs = []
    for blocks in parser.documents:
        sentences = [s for block in blocks for s in split_sentences(block) if is_prose(s)]
        if len(sentences) >= min_sentences:
            docs.append(sentences)
    return docs


def debian_doc_files(package: str, root: str | os.PathLike[str] = "/") -> list[Path]:
    """The HTML files of an installed documentation package, in a stable order."""
    if package not in DEBIAN_DOC_SOURCES:
        raise SccError(f"unknown documentation package {package!r}: choose one of {', '.join(DEBIAN_DOC_SOURCES)}")
    dir_globs, file_globs, excluded = DEBIAN_DOC_SOURCES[package]
    base = Path(root)
    files: set[Path] = set()
    for dir_glob in dir_globs:
        for folder in base.glob(dir_glob):
            for file_glob in file_globs:
                files.update(f for f in folder.glob(file_glob) if f.is_file())
    chosen = sorted(f for f in files if not any(x in f.parts or f.name.startswith(x) for x in excluded))
    if not chosen:
        raise SccError(f"no documentation of {package} under {base}: install it (`apt-get install {package}`) or "
                       f"choose another of {', '.join(DEBIAN_DOC_SOURCES)}")
    return chosen


def iter_debian_documents(packages: Sequence[str], root: str | os.PathLike[str] = "/") -> Iterator[list[str]]:
    for package in packages:
        for file in debian_doc_files(package, root):
            yield from html_to_documents(file.read_text(encoding="utf-8", errors="replace"))


def write_corpus(documents: Iterable[list[str]], out: str | os.PathLike[str], max_bytes: int = 0) -> CorpusStats:
    """Write documents (one sentence a line, blank line between) atomically; stop after `max_bytes` if > 0."""
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    size = docs = sentences = 0
    with open(tmp, "w", encoding="utf-8") as handle:
        for doc in documents:
            text = "\n".join(doc) + "\n\n"
            handle.write(text)
            size += len(text.encode("utf-8"))
            docs += 1
            sentences += len(doc)
            if max_bytes and size >= max_bytes:
                break
    if sentences == 0:
        tmp.unlink()
        raise SccError(f"no prose found for {target}: the documentation holds no sentences; choose another package")
    os.replace(tmp, target)
    return CorpusStats(str(target), size, docs, sentences)


# --------------------------------------------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m sccnlp.node.bert.corpus", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="action", required=True)
    build = sub.add_parser("build", help="build a corpus from installed Debian documentation")
    build.add_argument("--from-debian-docs", action="store_true", required=True,
                       help="convert installed documentation packages (HTML) to a corpus")
    build.add_argument("--package", action="append", choices=sorted(DEBIAN_DOC_SOURCES),
                       help=f"documentation package to read (repeatable; default {DEFAULT_PACKAGE})")
    build.add_argument("--root", default="/", help="file system root the packages are installed under")
    build.add_argument("--max-mb", type=float, default=0.0, help="stop after this many MB of text (0 = all)")
    build.add_argument("out", help="corpus file to write")
    check = sub.add_parser("check", help="validate a corpus and print its size")
    check.add_argument("path")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    def run() -> dict[str, Any]:
        if args.action == "build":
            packages = args.package or [DEFAULT_PACKAGE]
            return asdict(write_corpus(iter_debian_documents(packages, args.root), args.out, int(args.max_mb * 1e6)))
        return asdict(check_corpus(args.path))

    return json_command("sccnlp.node.bert.corpus", run)


if __name__ == "__main__":
    sys.exit(main())
