"""Seeds each fuzz target's corpus (fuzz/corpus/<target>/) from the shipped data:
excerpts of the sample corpus, the Markdown test documents and the README, each
behind a few configuration bytes (tokenizer, strategy, limits). Deterministic;
existing files are kept."""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEXT_TARGETS = ("sizer", "split", "outline", "expand")
CONFIGS = [bytes(c) for c in ([0, 7, 0, 0], [1, 63, 5, 3], [2, 3, 1, 1], [3, 0, 0, 0], [4, 31, 8, 2],
                              [5, 15, 3, 9], [0x7E, 200, 40, 10], [0xFF, 1, 0, 0])]


def texts() -> list[str]:
    out = []
    with gzip.open(ROOT / "tests/data/docs-corpus-small.jsonl.gz", "rt", encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= 40:
                break
            text = json.loads(line)["text"]
            out += [text[:600], text[len(text) // 2:len(text) // 2 + 1500]]
    for path in sorted((ROOT / "tests/data/markdown").glob("*")) + [ROOT / "README.md"]:
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            out += [text[k:k + 2000] for k in range(0, min(len(text), 8000), 2000)]
    out += ["---\ntitle: x\n---\n# A\n\n| a | b |\n|---|---|\n| x | y |\n\u3000\n", "aße [CLS] \u200b한 -->",
            "Title\n=====\n\nText.\n\n== Sub\n\nMore <|endoftext|> text.\n"]
    return out


def main() -> None:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "fuzz/corpus"
    seeds = texts()
    for target in TEXT_TARGETS:
        folder = corpus / target
        folder.mkdir(parents=True, exist_ok=True)
        for i, text in enumerate(seeds):
            data = CONFIGS[i % len(CONFIGS)] + text.encode("utf-8")
            (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)
    folder = corpus / "late"
    folder.mkdir(parents=True, exist_ok=True)
    for n, window, overlap in [(0, 1, 0), (404, 254, 32), (1199, 299, 255), (300, 300, 0), (1000, 7, 6)]:
        data = n.to_bytes(2, "little") + (window - 1).to_bytes(2, "little") + bytes([overlap]) + bytes(range(0, 256, 3))
        (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


if __name__ == "__main__":
    main()
