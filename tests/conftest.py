"""Shared fixtures: the two real tokenizers (WordPiece and byte-level BPE) in
chunkforge's and in HF ``tokenizers``' form, the shipped corpus, and a private
cache folder for the encoder's ONNX conversions."""

from __future__ import annotations

import gzip
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
import tokenizers

import chunkforge

# Ray Data's driver keeps a thread that asks Prometheus for metrics every 10 s and, when none
# answers, logs a DEBUG record with its traceback. Formatting it calls ast.parse (3.11's caret
# anchors), which on CPython 3.11.7 races pytest's assertion rewriting in the main thread
# ("AST constructor recursion depth mismatch", gh-106905). At INFO that record is never made.
os.environ.setdefault("RAY_DATA_LOG_LEVEL", "INFO")

DATA = Path(__file__).parent / "data"
# Unicode White_Space, what chunks are trimmed of (Python's isspace adds \x1c-\x1f)
WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
)
PACKAGE_DATA = Path(chunkforge.__file__).parent / "data"
TOKENIZER_FILES = {
    "wordpiece": PACKAGE_DATA / "all-MiniLM-L6-v2.tokenizer.json",
    "bpe": DATA / "bytelevel-bpe-8k.tokenizer.json",
}


@cache
def corpus(name: str = "docs-corpus-small.jsonl.gz") -> list[dict]:
    with gzip.open(DATA / name, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@cache
def hf_tokenizer(kind: str) -> tokenizers.Tokenizer:
    tok = tokenizers.Tokenizer.from_file(str(TOKENIZER_FILES[kind]))
    tok.no_truncation()
    tok.no_padding()
    return tok


@cache
def cf_tokenizer(kind: str) -> chunkforge.Tokenizer:
    return chunkforge.Tokenizer.from_file(TOKENIZER_FILES[kind])


def hf_count(kind: str, text: str) -> int:
    return len(hf_tokenizer(kind).encode(text, add_special_tokens=False).ids)


@pytest.fixture(params=sorted(TOKENIZER_FILES))
def kind(request) -> str:
    return request.param


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(folder: Path, *flags: str) -> tuple[subprocess.Popen[bytes], str]:
    """``chunkforge serve folder`` on a free loopback port, once ``/health`` answers."""
    import httpx

    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen(
        [sys.executable, "-m", "chunkforge", "serve", str(folder), "--port", str(port), *flags],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited: {process.stderr.read().decode()}")  # type: ignore[union-attr]
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return process, url
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("the server did not start within 120 s")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A private ONNX conversion cache (``CHUNKFORGE_CACHE``) shared by the whole run."""
    path = tmp_path_factory.mktemp("model-cache")
    old = os.environ.get("CHUNKFORGE_CACHE")
    os.environ["CHUNKFORGE_CACHE"] = str(path)
    yield path
    if old is None:
        del os.environ["CHUNKFORGE_CACHE"]
    else:
        os.environ["CHUNKFORGE_CACHE"] = old


def tiktoken_encoding():
    """A real tiktoken encoding with a few merges (the published ones are downloaded on first use)."""
    import tiktoken

    ranks = {bytes([i]): i for i in range(256)}
    for token in (b"th", b"he", b"the", b" t", b" the", b"in", b"er", b"on", b"an", b"es", b" a", b"at"):
        ranks[token] = len(ranks)
    return tiktoken.Encoding(
        "chunkforge-test", pat_str=r"""\s?\w+|\s?[^\w\s]+|\s+""", mergeable_ranks=ranks, special_tokens={}
    )
