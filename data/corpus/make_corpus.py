#!/usr/bin/env python3
"""Rebuild the multilingual fortune corpus in ``data/corpus/`` from Debian packages.

Usage (from the repository root)::

    python data/corpus/make_corpus.py            # installs missing packages with apt-get if root
    python data/corpus/make_corpus.py --no-install   # only tells which apt-get command to run
    python data/corpus/make_corpus.py --check        # rebuild in memory, compare with the shipped files

Reads the strfile text sources of Debian's fortune packages under
``/usr/share/games/fortunes`` (the ``.dat`` index files are ignored), cleans them
(see README.md next to this script) and writes, per language, ``<lang>.txt.gz``:
UTF-8 text, one document per line (a fortune's line breaks become single
spaces), documents in source order (files sorted by path). ``manifest.json``
records per-language document/word counts, the package versions used, the
SHA-256 of every ``.txt.gz`` file (verified by ``tanbias.lab.corpus``) and of its
decompressed text.

Standard library only, so it runs with any Python >= 3.9.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import unicodedata
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
FORTUNE_ROOT = "/usr/share/games/fortunes"

# language -> Debian packages whose fortune files are in that language
SOURCES: dict[str, list[str]] = {
    "en": ["fortunes"],
    "de": ["fortunes-de"],
    "es": ["fortunes-es"],
    "it": ["fortunes-it"],
    "pl": ["fortunes-pl"],
    "ru": ["fortunes-ru"],
    "cs": ["fortunes-cs"],
    "pt": ["fortunes-br", "fortunes-mario"],
}

# Files left out on purpose (path relative to FORTUNE_ROOT) and why.
EXCLUDED_FILES: dict[str, str] = {
    "ascii-art": "ASCII art, not prose",
    "de/asciiart": "ASCII art, not prose",
    "mario.arteascii": "ASCII art, not prose",
    "it/banner": "package banner (ASCII art)",
    "cs/klasik-sk": "Slovak, not Czech (too small to be a language of its own)",
    "es/varios.fortunes-pre": "pre-release draft of es/varios.fortunes",
}
# Any file under a directory called ``off`` is an offensive section: dropped.
OFFENSIVE_DIR = "off"

# Legacy encodings tried, per language, for a document that is not valid UTF-8.
LEGACY_ENCODING = {"pl": "iso-8859-2", "cs": "iso-8859-2", "ru": "koi8-r"}
DEFAULT_LEGACY_ENCODING = "cp1252"

MIN_WORDS = 3          # shorter documents are dropped
MIN_CHARS = 12
MIN_LETTER_SHARE = 0.6  # letters / non-space characters; below that: ASCII art, tables

# Small function-word lists for a stop-word language check. A word found in more
# than one list is ignored (see _distinctive_stopwords).
STOPWORDS: dict[str, str] = {
    "en": "the and of to is that it you was for with are this not have be what they his he "
          "she but on your will from an at by my we do would there which their been",
    "de": "der die das und ist nicht ich sie ein eine zu den mit sich auf für von dem auch "
          "wenn wie aber noch nur wird sind hat kann dass daß er nach bei",
    "es": "el los las y del por lo pero más muy sin hay está fue yo cuando también porque "
          "puede sus hace tiene esto",
    "it": "il che di non è della sono gli ha anche più questo io perché cosa nel alla delle "
          "dei degli questa",
    "pt": "não os dos das uma um ao são ele ela você eu isso muito pelo mais tem foi com em "
          "também então seu nós",
    "pl": "w nie się jest że jak co ale po tak już od za mnie jego tylko czy może być są ten "
          "bardzo dla jeśli ma",
    "cs": "je v že jako ale tak jsem co jen už není když jak bude být byl jsou pro ve nebo "
          "aby mu",
}
# Short words common to several of these languages (or to Latin and English
# quotations): never evidence for one language.
AMBIGUOUS = set("a e i o y de la le no en un una mi si ma ja es se man war do na to da per con "
                "so am in me te ti tu su al".split())
WORD_RE = re.compile(r"\w+", re.UNICODE)
ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
OVERSTRIKE_RE = re.compile(r".\x08")
CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
SPACE_RE = re.compile(r"\s+")


def _distinctive_stopwords() -> dict[str, set[str]]:
    sets = {lang: set(words.split()) - AMBIGUOUS for lang, words in STOPWORDS.items()}
    seen = Counter(w for s in sets.values() for w in s)
    return {lang: {w for w in s if seen[w] == 1} for lang, s in sets.items()}


DISTINCTIVE = _distinctive_stopwords()


# ---------------------------------------------------------------------------
# packages
# ---------------------------------------------------------------------------
def all_packages() -> list[str]:
    return [p for pkgs in SOURCES.values() for p in pkgs]


def package_version(pkg: str) -> str | None:
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Status}|${Version}", pkg],
                             capture_output=True, text=True, check=False)
    except FileNotFoundError:
        return None
    if out.returncode != 0 or "install ok installed" not in out.stdout:
        return None
    return out.stdout.split("|", 1)[1]


def package_files(pkg: str) -> list[str]:
    out = subprocess.run(["dpkg", "-L", pkg], capture_output=True, text=True, check=True)
    return out.stdout.split("\n")


def ensure_packages(install: bool) -> dict[str, str]:
    missing = [p for p in all_packages() if package_version(p) is None]
    if missing:
        cmd = ["apt-get", "install", "-y", "--no-install-recommends", *missing]
        if install and os.geteuid() == 0 and shutil.which("apt-get"):
            print("installing:", " ".join(missing), file=sys.stderr)
            subprocess.run(["apt-get", "update"], check=False)
            subprocess.run(cmd, check=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        else:
            sys.exit("missing Debian packages: " + " ".join(missing)
                     + "\ninstall them with:  sudo apt-get update && sudo " + " ".join(cmd))
    return {p: package_version(p) for p in all_packages()}


def source_files(pkg: str) -> tuple[list[Path], list[tuple[str, str]]]:
    """Text fortune files of ``pkg`` (sorted) and the files skipped, with reasons."""
    keep, skipped = [], []
    for name in sorted(package_files(pkg)):
        if not name.startswith(FORTUNE_ROOT + "/"):
            continue
        path = Path(name)
        if path.is_symlink() or not path.is_file() or name.endswith(".dat"):
            continue
        rel = name[len(FORTUNE_ROOT) + 1:]
        if OFFENSIVE_DIR in rel.split("/")[:-1]:
            skipped.append((rel, "offensive section (off/)"))
        elif rel in EXCLUDED_FILES:
            skipped.append((rel, EXCLUDED_FILES[rel]))
        elif path.stat().st_size == 0:
            skipped.append((rel, "empty"))
        else:
            keep.append(path)
    return keep, skipped


# ---------------------------------------------------------------------------
# cleaning
# ---------------------------------------------------------------------------
def split_fortunes(raw: bytes) -> list[bytes]:
    """Split a strfile source on lines consisting of a single ``%``."""
    docs, cur = [], []
    for line in raw.split(b"\n"):
        if line.rstrip(b"\r").strip() == b"%":
            docs.append(b"\n".join(cur))
            cur = []
        else:
            cur.append(line)
    docs.append(b"\n".join(cur))
    return docs


def decode(raw: bytes, lang: str) -> tuple[str, str]:
    try:
        return raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        enc = LEGACY_ENCODING.get(lang, DEFAULT_LEGACY_ENCODING)
        return raw.decode(enc, errors="replace"), enc


def normalise(text: str) -> str:
    text = ANSI_RE.sub("", text)
    while OVERSTRIKE_RE.search(text):       # "_\bx" underlining, "x\bx" bold
        text = OVERSTRIKE_RE.sub("", text)
    text = text.replace("\t", " ")
    text = CONTROL_RE.sub(" ", text)
    text = unicodedata.normalize("NFC", text)
    return SPACE_RE.sub(" ", text).strip()


def letter_share(text: str) -> float:
    chars = [c for c in text if not c.isspace()]
    return sum(c.isalpha() for c in chars) / max(len(chars), 1)


def cyrillic_share(text: str) -> float:
    letters = [c for c in text if c.isalpha()]
    cyr = sum("CYRILLIC" in unicodedata.name(c, "") for c in letters)
    return cyr / max(len(letters), 1)


def stopword_language(text: str) -> tuple[str | None, dict[str, int]]:
    words = [w.lower() for w in WORD_RE.findall(text)]
    scores = {lang: sum(w in s for w in words) for lang, s in DISTINCTIVE.items()}
    best = max(scores, key=scores.get)
    return (best if scores[best] > 0 else None), scores


def wrong_language(text: str, lang: str) -> str | None:
    """Name of the language the document is clearly written in, if it is not ``lang``."""
    cyr = cyrillic_share(text)
    if lang == "ru":
        return None if cyr >= 0.5 else "non-Cyrillic"
    if cyr >= 0.5:
        return "Cyrillic"
    best, scores = stopword_language(text)
    if best is None or best == lang:
        return None
    if scores[best] >= 3 and scores[best] >= 3 * scores[lang] + 1:
        return best
    return None


def dedup_key(text: str) -> str:
    return " ".join(WORD_RE.findall(text.casefold()))


def build(versions: dict[str, str]) -> tuple[dict[str, list[str]], dict]:
    corpus: dict[str, list[str]] = {}
    report: dict = {"languages": {}}
    seen: set[str] = set()              # dedup across all languages
    for lang, pkgs in SOURCES.items():
        docs: list[str] = []
        stats = Counter()
        files_used, files_skipped = [], []
        wrong = Counter()
        for pkg in pkgs:
            keep, skipped = source_files(pkg)
            files_skipped += [{"file": f, "package": pkg, "reason": r} for f, r in skipped]
            for path in keep:
                files_used.append(str(path.relative_to(FORTUNE_ROOT)))
                for raw in split_fortunes(path.read_bytes()):
                    if not raw.strip():
                        continue
                    stats["raw"] += 1
                    text, enc = decode(raw, lang)
                    if enc != "utf-8":
                        stats["legacy_decoded"] += 1
                    text = normalise(text)
                    if len(text) < MIN_CHARS or len(text.split()) < MIN_WORDS:
                        stats["too_short"] += 1
                        continue
                    if letter_share(text) < MIN_LETTER_SHARE:
                        stats["not_prose"] += 1
                        continue
                    other = wrong_language(text, lang)
                    if other is not None:
                        stats["wrong_language"] += 1
                        wrong[other] += 1
                        continue
                    key = dedup_key(text)
                    if key in seen:
                        stats["duplicate"] += 1
                        continue
                    seen.add(key)
                    docs.append(text)
        corpus[lang] = docs
        report["languages"][lang] = {
            "packages": {p: versions[p] for p in pkgs},
            "files_used": len(files_used),
            "files_skipped": files_skipped,
            "raw_documents": stats["raw"],
            "dropped": {k: stats[k] for k in ("too_short", "not_prose", "wrong_language", "duplicate")},
            "dropped_wrong_language_detected_as": dict(sorted(wrong.items())),
            "legacy_decoded_documents": stats["legacy_decoded"],
        }
    return corpus, report


# ---------------------------------------------------------------------------
# output
# ---------------------------------------------------------------------------
def gzip_bytes(text: str) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=buf, mtime=0) as gz:
        gz.write(text.encode("utf-8"))
    return buf.getvalue()


def serialise(docs: list[str]) -> str:
    return "".join(d + "\n" for d in docs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE, help="output directory (default: %(default)s)")
    ap.add_argument("--no-install", action="store_true", help="do not call apt-get; only say what to install")
    ap.add_argument("--check", action="store_true",
                    help="rebuild in memory and compare the decompressed text with the files in --out")
    args = ap.parse_args(argv)

    versions = ensure_packages(install=not args.no_install)
    corpus, report = build(versions)

    if args.check:
        manifest = json.loads((args.out / "manifest.json").read_text(encoding="utf-8"))
        ok = True
        for lang, docs in corpus.items():
            got = hashlib.sha256(serialise(docs).encode("utf-8")).hexdigest()
            want = manifest["files"].get(f"{lang}.txt.gz", {}).get("sha256_text")
            print(f"{lang}: {'ok' if got == want else 'DIFFERS'}")
            ok &= got == want
        return 0 if ok else 1

    args.out.mkdir(parents=True, exist_ok=True)
    files = {}
    for lang, docs in corpus.items():
        text = serialise(docs)
        blob = gzip_bytes(text)
        name = f"{lang}.txt.gz"
        (args.out / name).write_bytes(blob)
        files[name] = {
            "language": lang,
            "documents": len(docs),
            "words": sum(len(d.split()) for d in docs),
            "characters": len(text) - len(docs),
            "bytes_gz": len(blob),
            "sha256": hashlib.sha256(blob).hexdigest(),
            "sha256_text": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        }
    manifest = {
        "description": "Multilingual corpus from Debian fortune packages; one document per line, UTF-8, gzip.",
        "rebuild": "python data/corpus/make_corpus.py",
        "format": "one document per line; line breaks inside a fortune replaced by single spaces",
        "word_count": "whitespace-separated tokens (str.split())",
        "packages": versions,
        "totals": {
            "languages": len(files),
            "documents": sum(f["documents"] for f in files.values()),
            "words": sum(f["words"] for f in files.values()),
            "bytes_gz": sum(f["bytes_gz"] for f in files.values()),
        },
        "files": files,
        "cleaning": report,
    }
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n",
                                            encoding="utf-8")
    print(f"{'lang':5} {'docs':>7} {'words':>9} {'gz bytes':>9}")
    for name, f in files.items():
        print(f"{f['language']:5} {f['documents']:7d} {f['words']:9d} {f['bytes_gz']:9d}")
    t = manifest["totals"]
    print(f"{'total':5} {t['documents']:7d} {t['words']:9d} {t['bytes_gz']:9d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
