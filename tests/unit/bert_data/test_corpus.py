"""Corpus conversion (real installed documentation), validation and the byte-range document partition."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sccnlp.errors import SccError
from sccnlp.node.bert import corpus as bcorpus


def test_debian_reference_converts_to_prose(docs_root: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c.txt"
    rc = bcorpus.main(["build", "--from-debian-docs", "--package", "debian-reference-en", "--root", str(docs_root),
                       str(out)])
    stats = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert stats["documents"] >= 50 and stats["sentences"] >= 3000 and stats["bytes"] >= 250_000
    text = out.read_text(encoding="utf-8")
    assert "\n\n" in text and not text.startswith("\n")
    lines = [line for line in text.splitlines() if line]
    assert len(lines) == stats["sentences"]
    assert not [line for line in lines if re.search(r"</?(p|a|div|span|code|pre|li|td|tt|br|h\d)\b[^>]*>", line)]
    assert not [line for line in lines if "&amp;" in line or "&lt;" in line]  # entities decoded
    assert all(len(line.split()) >= 5 for line in lines)
    assert sum(bool(re.search(r"[.!?:][\"')\]]*$", line)) for line in lines) == len(lines)
    assert "Debian" in text  # real content, not generated


def test_html_extraction_skips_code_navigation_and_scripts() -> None:
    html = """<html><head><title>T</title><script>var x = 1;</script></head><body>
      <div class="related">Navigation links go here and are not prose at all.</div>
      <h1>First</h1><p>The first paragraph has two sentences about packages. It ends here, e.g. with an
      abbreviation.</p><pre>apt-get install foo; echo done. This is code and must go.</pre>
      <p>Another paragraph explains the <code>apt</code> command in plain words!</p>
      <h2>Second</h2><p>Too short.</p><p>This second section has one sentence that is long enough.</p>
      <p>And a second sentence of the second section closes it.</p></body></html>"""
    docs = bcorpus.html_to_documents(html)
    assert docs == [
        ["The first paragraph has two sentences about packages.", "It ends here, e.g. with an abbreviation.",
         "Another paragraph explains the apt command in plain words!"],
        ["This second section has one sentence that is long enough.",
         "And a second sentence of the second section closes it."],
    ]


def _write(path: Path, docs: list[list[str]], blanks: str = "\n") -> Path:
    path.write_text(blanks.join("\n".join(d) + "\n" for d in docs), encoding="utf-8")
    return path


@pytest.mark.parametrize("count", [1, 2, 3, 5, 8, 64])
def test_partitions_are_disjoint_and_complete(real_corpus: Path, count: int) -> None:
    whole = bcorpus.read_partition(real_corpus, 0, 1)
    parts = [bcorpus.read_partition(real_corpus, i, count) for i in range(count)]
    joined = [doc for part in parts for doc in part]
    assert joined == whole  # every document once, in file order
    assert len(whole) >= 50


def test_partition_handles_blank_runs_and_crlf(tmp_path: Path) -> None:
    docs = [[f"doc {d} sentence {s}." for s in range(1 + d % 4)] for d in range(40)]
    file = _write(tmp_path / "c.txt", docs, blanks="\n \n\r\n")
    file.write_bytes(file.read_bytes().replace(b"sentence 0.\n", b"sentence 0.\r\n"))
    for count in (1, 3, 7, 40, 97):
        got = [doc for i in range(count) for doc in bcorpus.read_partition(file, i, count)]
        assert got == docs


def test_check_corpus_counts(tmp_path: Path) -> None:
    file = _write(tmp_path / "c.txt", [["One sentence here.", "Two."], ["Three."]])
    stats = bcorpus.check_corpus(file)
    assert (stats.documents, stats.sentences) == (2, 3)


@pytest.mark.parametrize("content", [None, "", "\n\n  \n"])
def test_missing_or_empty_corpus_is_one_clear_line(tmp_path: Path, content: str | None,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "corpus.txt"
    if content is not None:
        file.write_text(content)
    with pytest.raises(SccError, match="does not exist" if content is None else "is empty"):
        bcorpus.check_corpus(file)
    assert bcorpus.main(["check", str(file)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and str(file) in err


def test_package_not_installed_says_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(SccError, match="install it"):
        bcorpus.debian_doc_files("debian-handbook", tmp_path)


def test_unknown_package_names_the_choices(tmp_path: Path) -> None:
    with pytest.raises(SccError, match="choose one of python3-doc"):
        bcorpus.debian_doc_files("no-such-doc", tmp_path)
