"""A change to the ranking judged by slices before it lands: the recommended ``Index.query``'s
per-question evidence-token recall at 500 and 1,000 tokens on the dev set (``benches/devset``),
from one saved index, run once with the code before the change (``--save``) and once with the
code after it (``--against`` the first run's file). Both runs load the same index, so the
answers differ only by the code.

A change made for speed (it should answer as well, not better) lands when it is behind outside
the paired 95% CI on no slice (the whole half, its evidence-length buckets, its genres; at
either budget) of the test half nor of the dev half; the report also gives the rule for a
change made for quality (``beats`` on the test half, ``adopted`` with the dev half).

    python benches/retrieval_ab.py --index IDX --save before.npz      # the code before
    python benches/retrieval_ab.py --index IDX --save after.npz --against before.npz \\
        --change "what changed" --out benches/results/retrieval-ab.md   # the code after

``--index`` is built and saved there by the first run when it does not exist. ``--documents
BEFORE AFTER`` adds the document dev set (``benches/devset-documents``): the structure side's
per-question recalls that ``benches/documents_eval.py --save-recalls`` wrote with each code,
by the same rule over its slices (the whole set, each format, each kind of evidence).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from chunkforge.eval import Span  # noqa: E402
from chunkforge.index import Index  # noqa: E402
from retrieval_lab import Lab, adopted, beats, paired_ci, percent, test_slices  # noqa: E402

BUDGETS = (500, 1000)
DOCUMENTS = Path(__file__).parent / "devset-documents" / "queries.jsonl"


def recalls(lab: Lab, index: Index) -> dict[int, np.ndarray]:
    """Per-question recall of ``index.query`` at each budget (the library's defaults otherwise)."""
    out = {}
    for b in BUDGETS:
        payloads = [index.query(q.query, budget_tokens=b) for q in lab.queries]
        out[b] = lab.recall([[Span(p.doc_id, p.start, p.end) for p in payload.passages] for payload in payloads])
    return out


def report(lab: Lab, after: dict[int, np.ndarray], before: dict[int, np.ndarray], change: str, seconds: float) -> str:
    """The Markdown report: means by half and budget, both verdicts, and each slice's paired difference."""
    verdicts = {half: beats(after, before, test_slices(lab, half)) for half in ("test", "dev")}
    dev = lab.split == "dev"
    dev_gain = float(np.mean([np.nanmean(after[b][dev]) - np.nanmean(before[b][dev]) for b in BUDGETS])) * 100
    changed = {b: int(np.sum(~np.isclose(after[b], before[b], equal_nan=True))) for b in BUDGETS}
    speed = not verdicts["test"].behind and not verdicts["dev"].behind
    lines = [
        "<!-- Written by benches/retrieval_ab.py. -->",
        "# A ranking change judged by slices",
        "",
        f"**The change:** {change}",
        "",
        f"`benches/devset`, one saved index loaded by both runs, `Index.query` with the library's defaults at "
        f"each budget; evidence-token recall (%), means over answerable questions; this run {seconds:.0f} s. "
        f"Questions whose recall changed: {changed[500]} at 500 tokens, {changed[1000]} at 1,000 "
        f"(of {len(lab.queries)}).",
        "",
        "    " + shlex.join(["python", "benches/retrieval_ab.py", *sys.argv[1:]]),
        "",
        "| code | " + " | ".join(f"{half} @{b}" for b in BUDGETS for half in ("dev", "test")) + " |",
        "|---" * 5 + "|",
    ]
    for name, r in (("before", before), ("after", after)):
        cells = [f"{percent(r[b], lab.split == half):.1f}" for b in BUDGETS for half in ("dev", "test")]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"- Test half: after {verdicts['test']} before.",
        f"- Dev half: after {verdicts['dev']} before; dev mean of both budgets {dev_gain:+.2f} points.",
        f"- A change made for speed lands when it is behind outside the CI nowhere in either half: "
        f"**{'it may land' if speed else 'it may not land'}**. "
        f"A change made for quality (beats on test, the dev half agreeing): "
        f"{'adopted' if adopted(verdicts['test'], verdicts['dev'], dev_gain) else 'not adopted'}.",
        "",
        "| slice | n | " + " | ".join(f"after minus before @{b}" for b in BUDGETS) + " |",
        "|---" * (2 + len(BUDGETS)) + "|",
    ]
    answerable = ~np.isnan(before[BUDGETS[0]])
    for half in ("test", "dev"):
        for label, m in test_slices(lab, half):
            m = m & answerable
            cells = [paired_ci(after[b], before[b], m) for b in BUDGETS]
            lines.append(f"| {half}: {label} | {int(m.sum())} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def documents_report(before_file: str, after_file: str) -> list[str]:
    """The document dev set's lines of the report (see the module)."""
    queries = [json.loads(line) for line in DOCUMENTS.read_text(encoding="utf-8").splitlines() if line.strip()]
    fmt = np.array([q["format"] for q in queries])
    kinds = sorted({s for q in queries for s in q["slices"]})
    everything = np.ones(len(queries), bool)
    slices = [("all", everything)] + [(f, fmt == f) for f in sorted(set(fmt.tolist()))]
    slices += [(k, np.array([k in q["slices"] for q in queries])) for k in kinds]
    saved = {name: np.load(f) for name, f in (("before", before_file), ("after", after_file))}
    before = {b: saved["before"][f"structure @{b}"] for b in BUDGETS}
    after = {b: saved["after"][f"structure @{b}"] for b in BUDGETS}
    verdict = beats(after, before, slices)
    changed = {b: int(np.sum(~np.isclose(after[b], before[b], equal_nan=True))) for b in BUDGETS}
    lines = [
        "",
        "## The document dev set",
        "",
        f"`benches/devset-documents` ({len(queries)} questions; the readers' text, `benches/documents_eval.py "
        f"--save-recalls` run with each code; each run builds its own index). Questions whose recall changed: "
        f"{changed[500]} at 500 tokens, {changed[1000]} at 1,000. After {verdict} before: "
        f"**{'it may land' if not verdict.behind else 'it may not land'}** by this set.",
        "",
        "| slice | n | " + " | ".join(f"before @{b} | after @{b} | after minus before @{b}" for b in BUDGETS) + " |",
        "|---" * (2 + 3 * len(BUDGETS)) + "|",
    ]
    for label, m in slices:
        cells = [
            c
            for b in BUDGETS
            for c in (f"{percent(before[b], m):.1f}", f"{percent(after[b], m):.1f}", paired_ci(after[b], before[b], m))
        ]
        lines.append(f"| {label} | {int(m.sum())} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", required=True, help="the dev set's saved index (built and saved when missing)")
    parser.add_argument("--save", required=True, help="write this run's per-question recalls here (npz)")
    parser.add_argument("--against", help="the recalls of the code before the change (an earlier --save)")
    parser.add_argument("--change", default="(not named)", help="what changed, for the report")
    parser.add_argument("--out", help="write the Markdown report here (with --against)")
    parser.add_argument("--documents", nargs=2, metavar=("BEFORE", "AFTER"), help="documents_eval.py's recalls")
    args = parser.parse_args()
    started = time.perf_counter()
    lab = Lab()
    if Path(args.index).exists():
        index = Index.load(args.index, lab.encoder)
    else:
        index = Index.build([{"id": d.doc_id, "text": d.text, **d.metadata} for d in lab.corpus], lab.encoder)
        index.save(args.index)
    mine = recalls(lab, index)
    np.savez(args.save, **{str(b): r for b, r in mine.items()})
    print({b: round(float(np.nanmean(r)) * 100, 2) for b, r in mine.items()}, flush=True)
    if args.against:
        saved = np.load(args.against)
        text = report(lab, mine, {b: saved[str(b)] for b in BUDGETS}, args.change, time.perf_counter() - started)
        if args.documents:
            text += "\n".join(documents_report(*args.documents)) + "\n"
        if args.out:
            Path(args.out).write_text(text, encoding="utf-8")
        print(text)


if __name__ == "__main__":
    main()
