"""The report of several evaluations: JSON (:func:`report`), Markdown (:func:`markdown`)
and a PNG plot (:func:`plot`)."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .datasets import Document, Query
from .metrics import METRICS, _mean_std
from .run import Result


def _slices(queries: Sequence[Query], corpus: Sequence[Document]) -> dict[str, list[str]]:
    """Per slice kind (type, document, and source when the corpus has one), each query's value."""
    source = {d.doc_id: str(d.metadata["source"]) for d in corpus if "source" in d.metadata}

    def one(values: Iterable[str], none: str) -> str:
        values = list(dict.fromkeys(values))
        return values[0] if len(values) == 1 else "(several)" if values else none

    out = {
        "type": [q.type or ("unanswerable" if not q.references else "(none)") for q in queries],
        "document": [one((r.doc_id for r in q.references), "(no evidence)") for q in queries],
    }
    if source:
        out["source"] = [one((source.get(r.doc_id, "?") for r in q.references), "(no evidence)") for q in queries]
    return out


def report(
    results: Sequence[Result],
    queries: Sequence[Query],
    corpus: Sequence[Document],
    header: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON report of several evaluations: per config the summaries (``k`` and
    ``budget``), per-slice means, per-question rows, and the questions found by the
    first config and missed by each other one, and back."""
    slices = _slices(queries, corpus)
    answerable = np.array([bool(q.references) for q in queries])
    configs = []
    for r in results:
        modes = {"k": r.at_k, **({"budget": r.at_budget} if r.at_budget is not None else {})}
        per_slice = {}
        for kind, values in slices.items():
            per_slice[kind] = {
                v: {
                    mode: {
                        m: _mean_std(getattr(s.subset(np.array(values) == v), m))["mean"]
                        for m in ("recall", "iou", "evidence_recall")
                    }
                    for mode, s in modes.items()
                }
                for v in sorted(set(values))
            }
        top = {
            "answerable": _mean_std(r.top_score[answerable])["mean"],
            "unanswerable": _mean_std(r.top_score[~answerable])["mean"],
        }
        configs.append(
            {
                "name": r.name,
                "chunks": r.chunks,
                "mean_chunk_tokens": r.mean_chunk_tokens,
                "truncated_for_encoder": r.truncated,
                "settings": r.settings,
                "summary": {mode: s.summary() for mode, s in modes.items()},
                "slices": per_slice,
                "top_similarity": top,
            }
        )
    questions = []
    for i, q in enumerate(queries):
        row: dict[str, Any] = {
            "id": q.id,
            "query": q.query,
            "type": slices["type"][i],
            "document": slices["document"][i],
            "configs": {},
        }
        for r in results:
            modes = {"k": r.at_k, **({"budget": r.at_budget} if r.at_budget is not None else {})}
            row["configs"][r.name] = {
                mode: {m: _num(getattr(s, m)[i]) for m in (*METRICS, "found", "context", "n")}
                for mode, s in modes.items()
            }
            row["configs"][r.name]["top_similarity"] = float(r.top_score[i])
            row["configs"][r.name]["retrieved"] = [
                [s.doc_id, s.start, s.end, round(sim, 4)] for s, sim, _ in r.ranked[i][: r.settings["k"]]
            ]
        questions.append(row)
    changes = []
    base = results[0]
    for other in results[1:]:
        for mode in ("k", "budget"):
            a, b = getattr(base, f"at_{mode}"), getattr(other, f"at_{mode}")
            if a is None or b is None:
                continue
            changes.append(
                {
                    "from": base.name,
                    "to": other.name,
                    "mode": mode,
                    "found_to_missed": [queries[int(i)].id for i in np.flatnonzero(a.found & ~b.found)],
                    "missed_to_found": [queries[int(i)].id for i in np.flatnonzero(~a.found & b.found)],
                }
            )
    out: dict[str, Any] = _clean(
        {
            "header": dict(header or {}),
            "queries": len(queries),
            "answerable": int(answerable.sum()),
            "configs": configs,
            "changes": changes,
            "questions": questions,
        }
    )
    return out


def _clean(value: Any) -> Any:
    """``value`` with NaN floats replaced by None (valid JSON)."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return None if isinstance(value, float) and math.isnan(value) else value


def _num(x: Any) -> Any:
    if isinstance(x, (np.bool_, bool)):
        return bool(x)
    x = float(x)
    return None if math.isnan(x) else round(x, 4)


def _pm(stat: Mapping[str, float]) -> str:
    if stat["mean"] is None or math.isnan(stat["mean"]):
        return "–"
    return f"{stat['mean']:.3f} ± {stat['std']:.3f}"


def markdown(rep: Mapping[str, Any]) -> str:
    """The Markdown rendering of a :func:`report`."""
    h = rep["header"]
    lines = ["# chunkforge eval", ""]
    lines += [f"- {key}: {value}" for key, value in h.items()]
    lines += [f"- queries: {rep['queries']} ({rep['answerable']} with evidence; means are over those)", ""]
    cols = ("recall", "precision", "iou", "precision_omega", "evidence_recall", "mrr", "ndcg")
    for mode, title in (("k", f"top k = {h.get('k')}"), ("budget", f"budget = {h.get('budget')} tokens")):
        if not all(mode in c["summary"] for c in rep["configs"]):
            continue
        lines += [
            f"## Retrieval at {title} (mean ± std)",
            "",
            "| config | chunks | mean tokens | " + " | ".join(cols) + " | found | context |",
            "|---" * (len(cols) + 5) + "|",
        ]
        for c in rep["configs"]:
            s = c["summary"][mode]
            lines.append(
                f"| {c['name']} | {c['chunks']} | {c['mean_chunk_tokens']:.1f} | "
                + " | ".join(_pm(s[m]) for m in cols)
                + f" | {_fmt(s['found']['mean'])} | {s['context']['mean']:.0f} |"
            )
        lines.append("")
    notes = [
        f"{c['name']}: {c['truncated_for_encoder']} chunks longer than the encoder's window were truncated "
        "for embedding"
        for c in rep["configs"]
        if c["truncated_for_encoder"]
    ]
    if notes:
        lines += ["Notes: " + "; ".join(notes) + ".", ""]
    lines += ["## Similarity of the top chunk", "", "| config | answerable | unanswerable |", "|---|---|---|"]
    lines += [
        f"| {c['name']} | {_fmt(c['top_similarity']['answerable'])} | {_fmt(c['top_similarity']['unanswerable'])} |"
        for c in rep["configs"]
    ]
    lines.append("")
    for kind in rep["configs"][0]["slices"]:
        modes = [m for m in ("k", "budget") if m in rep["configs"][0]["summary"]]
        lines += [f"## By {kind}: recall / IoU / evidence recall", ""]
        head = [f"{c['name']} @{m}" for c in rep["configs"] for m in modes]
        lines += [f"| {kind} | " + " | ".join(head) + " |", "|---" * (len(head) + 1) + "|"]
        for value in rep["configs"][0]["slices"][kind]:
            cells = []
            for c in rep["configs"]:
                for m in modes:
                    v = c["slices"][kind][value][m]
                    cells.append(f"{_fmt(v['recall'])} / {_fmt(v['iou'])} / {_fmt(v['evidence_recall'])}")
            if any(cell != "– / – / –" for cell in cells):
                lines.append(f"| {value} | " + " | ".join(cells) + " |")
        lines.append("")
    if rep["changes"]:
        lines += [
            "## Found → missed, missed → found",
            "",
            (
                "A question is found when the retrieved context covers every one of its evidence spans "
                f"(each at least {h.get('coverage')})."
            ),
            "",
        ]
        for ch in rep["changes"]:
            lines.append(
                f"- {ch['from']} → {ch['to']} @{ch['mode']}: found → missed "
                f"{', '.join(ch['found_to_missed']) or 'none'}; missed → found "
                f"{', '.join(ch['missed_to_found']) or 'none'}"
            )
        lines.append("")
    names = [c["name"] for c in rep["configs"]]
    lines += [
        "## Per question (recall / IoU, found ✓, at k)",
        "",
        "| id | type | query | " + " | ".join(names) + " |",
        "|---" * (len(names) + 3) + "|",
    ]
    for q in rep["questions"]:
        cells = []
        for n in names:
            s = q["configs"][n]["k"]
            cells.append(
                "–" if s["recall"] is None else f"{s['recall']:.2f} / {s['iou']:.2f}{' ✓' if s['found'] else ''}"
            )
        text = q["query"].replace("|", "\\|")
        lines.append(f"| {q['id']} | {q['type']} | {text} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _fmt(x: float | None) -> str:
    return "–" if x is None or math.isnan(x) else f"{x:.3f}"


def plot(rep: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """A PNG of recall and IoU against mean chunk size, per config, at k and at the budget
    (needs matplotlib: ``pip install 'chunkforge[eval]'``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = [m for m in ("k", "budget") if all(m in c["summary"] for c in rep["configs"])]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    size = [c["mean_chunk_tokens"] for c in rep["configs"]]
    labels = {"k": f"top k = {rep['header'].get('k')}", "budget": f"budget = {rep['header'].get('budget')} tokens"}
    for ax, metric in zip(axes, ("recall", "iou")):
        for mode, marker in zip(modes, ("o", "s")):
            ys = [c["summary"][mode][metric]["mean"] for c in rep["configs"]]
            ax.scatter(size, ys, marker=marker, label=labels[mode])
            for x, y, c in zip(size, ys, rep["configs"]):
                ax.annotate(c["name"], (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        ax.set(xlabel="mean chunk size (tokens)", ylabel=f"mean {metric}", title=f"{metric} vs chunk size")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png")
    plt.close(fig)
