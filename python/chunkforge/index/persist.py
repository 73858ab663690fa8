"""An :class:`~chunkforge.index.Index` on disk and from the bulk job's dataset: :meth:`Index.save
<chunkforge.index.Index.save>` (versioned folders behind a ``CURRENT`` pointer, a checksummed
manifest), :meth:`Index.load <chunkforge.index.Index.load>` (every file checked before native
code sees it) and :meth:`Index.from_dataset <chunkforge.index.Index.from_dataset>` (the job's
trees and vectors, nothing cut or embedded again). The functions take the index they work on.

>>> import tempfile
>>> from chunkforge.index import Index
>>> folder = tempfile.TemporaryDirectory()
>>> save(Index.build([{"id": "guide.md", "text": "Run it."}]), folder.name)
>>> load(Index, folder.name).doc_ids
['guide.md']
>>> folder.cleanup()
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .._dataset import DatasetManifest
from .._io import atomic_path
from ..errors import ArgumentError, InputError
from ..tokenizer import Tokenizer
from .documents import Saved
from .graph import Graph
from .storage import (
    FORMAT,
    CorruptIndexError,
    check_labels,
    check_manifest,
    checksum,
    fsync,
    fsync_dir,
    headings_of,
    holding,
    manifest_checksum,
    tokenizer_json,
    version_folder,
)
from .trees import TreeSettings, metadata_json, read_docs, read_shard, scratch_expander

if TYPE_CHECKING:
    from ..encoder import Encoder

Index = Any
"""The :class:`~chunkforge.index.Index` these functions take and make (named here without
importing it: ``index.index`` imports this module)."""


def save(index: Index, path: str | os.PathLike[str]) -> None:
    """What :meth:`Index.save` does."""
    root = Path(path)
    if root.exists() and not root.is_dir():
        raise ArgumentError(f"index path {root} exists and is not a folder", param="path", aside=True)
    ours = ("v-", ".CURRENT.")  # versions and pointer temps of a save killed before its first CURRENT
    if root.is_dir() and not (root / "CURRENT").is_file() and any(not p.name.startswith(ours) for p in root.iterdir()):
        raise ArgumentError(
            f"index path {root} is a non-empty folder that is not a chunkforge index", param="path", aside=True
        )
    root.mkdir(parents=True, exist_ok=True)
    with holding(root, shared=False):
        _save_version(index, root)


def _save_version(index: Index, root: Path) -> None:
    """:meth:`save` with the folder held: a new version, then ``CURRENT``, then the old
    versions removed."""
    versions = [p.name for p in root.iterdir() if p.name.startswith("v-")]
    number = max([int(v.split("-")[1]) for v in versions if v.split("-")[1].isdigit()] + [0]) + 1
    folder = root / f"v-{number:06d}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    try:
        _write(index, folder)
        fsync_dir(folder)
    except BaseException:  # a failed save (a full disk) leaves no half-written version
        shutil.rmtree(folder, ignore_errors=True)
        raise
    with atomic_path(root / "CURRENT") as pointer:
        pointer.write_text(folder.name + "\n", encoding="utf-8")
    fsync_dir(root)
    for old in versions:
        if old != folder.name:
            shutil.rmtree(root / old, ignore_errors=True)


def _write(index: Index, folder: Path) -> None:
    slots, docs = list(index._slot_of.values()), index._in_order()
    trees = [index._expander.tree(slot) for slot in slots]  # nodes, leaves, sentences, headings
    pq.write_table(
        pa.table(
            {
                "doc_id": pa.array([d.doc_id for d in docs], pa.string()),
                "source": pa.array([d.source for d in docs], pa.string()),
                "text": pa.array([d.text for d in docs], pa.large_string()),
                "headings": pa.array([json.dumps(t[3], ensure_ascii=False) for t in trees], pa.string()),
                "metadata": pa.array([metadata_json(d.doc_id, d.metadata) for d in docs], pa.string()),
            }
        ),
        folder / "docs.parquet",
    )
    nodes = []
    for i, (d, (table, leaves, _, _)) in enumerate(zip(docs, trees)):
        labels = np.full(len(table), -1, np.int64)
        labels[leaves] = d.labels
        nodes.append(np.column_stack([np.full(len(table), i), table, labels]))
    table = np.concatenate(nodes) if nodes else np.zeros((0, 7), np.int64)
    pq.write_table(
        pa.table(
            {name: table[:, i] for i, name in enumerate(("doc", "start", "end", "parent", "section", "level", "label"))}
        ),
        folder / "nodes.parquet",
    )
    sents = [np.column_stack([np.full(len(t[2]), i), t[2]]) for i, t in enumerate(trees)]
    table = np.concatenate(sents) if sents else np.zeros((0, 4), np.int64)
    pq.write_table(
        pa.table({name: table[:, i] for i, name in enumerate(("doc", "start", "end", "section"))}),
        folder / "sentences.parquet",
    )
    if index._graph is not None:
        index._graph.save(folder)
        top = index._next_label
        np.save(folder / "quantized.npy", index._vectors[:top], allow_pickle=False)
        np.save(folder / "scales.npy", index._scales[:top], allow_pickle=False)
    (folder / "tokenizer.json").write_text(tokenizer_json(index.tokenizer), encoding="utf-8")
    files = sorted(p.name for p in folder.iterdir())
    manifest = {
        "format": FORMAT,
        "settings": {
            "leaf_tokens": index.leaf_tokens,
            "parent_tokens": list(index.parent_tokens),
            "structure": index.structure,
            "hybrid": index.hybrid,
            "weights": list(index.weights),
            "search_prefix": index.search_prefix,
            "encoder_variant": index.encoder_variant,
        },
        "dim": index._dim,
        "encoder": index._encoder_config if index._encoder is None else encoder_config(index._encoder),
        "next_label": index._next_label,
        "documents": len(docs),
        "graphs": index._graph.files if index._graph is not None else [],
        "files": {name: checksum(folder / name) for name in files},
    }
    manifest["checksum"] = manifest_checksum(manifest)
    for name in files:
        fsync(folder / name)
    with atomic_path(folder / "manifest.json") as tmp:
        tmp.write_text(json.dumps(manifest, indent=1), encoding="utf-8")


def load(cls: type[Index], path: str | os.PathLike[str], encoder: Encoder | None = None) -> Index:
    """What :meth:`Index.load` does."""
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"no index folder at {root}")
    with holding(root, shared=True):
        return _load_version(cls, root, encoder)


def _load_version(cls: type[Index], root: Path, encoder: Encoder | None) -> Index:
    """:meth:`load` with the folder held: the version ``CURRENT`` names."""
    folder = version_folder(root)
    manifest_file = folder / "manifest.json"
    try:
        manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CorruptIndexError(f"corrupt index: cannot read {manifest_file}: {exc}") from exc
    check_manifest(manifest, manifest_file)
    for name, expected in manifest["files"].items():
        if not (folder / name).is_file() or checksum(folder / name) != expected:
            raise CorruptIndexError(f"corrupt index: {folder / name} is missing or does not match its checksum")
    try:  # kept as text: the next save writes it again after this version is gone
        tokenizer = Tokenizer.from_str((folder / "tokenizer.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise CorruptIndexError(f"corrupt index: cannot read {folder / 'tokenizer.json'}: {exc}") from exc
    if encoder is not None and encoder.dim != manifest["dim"]:
        raise ArgumentError(
            f"has dim {encoder.dim}, the index at {root} was built with {manifest['dim']}", param="encoder"
        )
    try:
        index = cls(encoder, **{"search_prefix": False, **manifest["settings"]})  # saved before the prefix: none
    except (TypeError, ValueError) as exc:
        raise CorruptIndexError(f"corrupt index: {manifest_file}: bad settings ({exc})") from exc
    index.tokenizer = tokenizer
    index._expander = scratch_expander(tokenizer)
    index._dim = manifest["dim"]
    if not isinstance(manifest.get("encoder"), (dict, type(None))):
        raise CorruptIndexError(f"corrupt index: {manifest_file}: 'encoder' is not an object")
    index._encoder_config = manifest.get("encoder")
    try:
        docs = pq.read_table(folder / "docs.parquet").to_pydict()
        nodes = pq.read_table(folder / "nodes.parquet")
        sents = pq.read_table(folder / "sentences.parquet")
    except (OSError, pa.ArrowException) as exc:
        raise CorruptIndexError(f"corrupt index in {folder}: {exc}") from exc
    try:
        docs["metadata"] = [json.loads(m) for m in docs.get("metadata", ["{}"] * len(docs["doc_id"]))]
    except (TypeError, ValueError) as exc:
        raise CorruptIndexError(f"corrupt index: {folder / 'docs.parquet'}: bad metadata ({exc})") from exc
    if not all(isinstance(m, dict) for m in docs["metadata"]):
        raise CorruptIndexError(f"corrupt index: {folder / 'docs.parquet'}: metadata must be JSON objects")
    node_cols = np.column_stack(
        [nodes[c].to_numpy() for c in ("doc", "start", "end", "parent", "section", "level", "label")]
    ).reshape(-1, 7)
    sent_cols = np.column_stack([sents[c].to_numpy() for c in ("doc", "start", "end", "section")]).reshape(-1, 4)
    check_labels(node_cols[:, 6], manifest, folder / "nodes.parquet")
    node_split = np.searchsorted(node_cols[:, 0], np.arange(len(docs["doc_id"]) + 1))
    sent_split = np.searchsorted(sent_cols[:, 0], np.arange(len(docs["doc_id"]) + 1))
    saved: list[Saved] = []
    for i in range(len(docs["doc_id"])):
        table = node_cols[node_split[i] : node_split[i + 1]]
        leaves = np.flatnonzero(table[:, 6] >= 0)
        headings = headings_of(docs["headings"][i], folder / "docs.parquet")
        saved.append(
            (
                table[:, 1:6].copy(),
                leaves,
                table[leaves, 6].copy(),
                sent_cols[sent_split[i] : sent_split[i + 1], 1:].copy(),
                headings,
            )
        )
    try:
        index._add_saved(docs, saved)
    except ValueError as exc:
        raise CorruptIndexError(f"corrupt index in {folder}: {exc}") from exc
    labels = np.concatenate([s[2] for s in saved]) if saved else np.zeros(0, np.int64)
    # format 1 kept one graph, vectors.hnsw
    graphs = manifest.get("graphs", ["vectors.hnsw"] if (folder / "vectors.hnsw").is_file() else [])
    if graphs:
        try:
            index._graph = Graph.load(
                [folder / name for name in graphs], manifest["dim"], labels, manifest["next_label"]
            )
        except RuntimeError as exc:
            raise CorruptIndexError(f"corrupt index: cannot load the graphs {graphs} in {folder}: {exc}") from exc
    elif len(labels):
        raise CorruptIndexError(f"corrupt index: {manifest_file} lists leaves but no graph")
    in_use = max(index._next_label, index._graph.top if index._graph is not None else 0)
    if manifest["next_label"] < in_use:
        raise CorruptIndexError(
            f"corrupt index: {manifest_file} says next_label {manifest['next_label']}, "
            f"but labels up to {in_use - 1} are in use"
        )
    index._next_label = manifest["next_label"]
    if (folder / "quantized.npy").is_file() and (folder / "scales.npy").is_file():
        try:
            index._vectors = np.load(folder / "quantized.npy", allow_pickle=False)
            index._scales = np.load(folder / "scales.npy", allow_pickle=False)
        except ValueError as exc:
            raise CorruptIndexError(f"corrupt index: cannot read the vectors in {folder}: {exc}") from exc
        if (
            index._vectors.dtype != np.int8
            or index._vectors.shape != (len(index._scales), manifest["dim"] or 0)
            or (len(labels) and labels.max() >= len(index._scales))
        ):
            raise CorruptIndexError(f"corrupt index: {folder / 'quantized.npy'} does not match the index")
    elif len(labels):
        raise CorruptIndexError(f"corrupt index: {folder} has leaves but no quantized.npy and scales.npy")
    return index


def from_dataset(
    cls: type[Index], path: str | os.PathLike[str], encoder: Encoder | None = None, *, threads: int | None = None
) -> Index:
    """What :meth:`Index.from_dataset` does."""
    root = Path(path)
    manifest = DatasetManifest.read(root)
    if manifest.units != "tree":
        raise ArgumentError(
            f"{root} holds plain chunks; build it with `embed-docs --index` (units='tree')", param="path", aside=True
        )
    tree = manifest.chunker
    model = manifest.model
    if encoder is None and model["name"] != "default":
        raise ArgumentError(
            f"{root} was embedded with {model['name']!r}: pass that Encoder", param="encoder", aside=True
        )
    if encoder is not None and encoder.dim != model["dim"]:
        raise ArgumentError(
            f"has dim {encoder.dim}, the dataset at {root} was embedded with {model['dim']}", param="encoder"
        )
    try:
        settings = TreeSettings.from_dict(tree)
        settings.check()
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{root / 'manifest.json'}: bad chunker settings ({exc}); rerun the job") from exc
    index = cls(
        encoder,
        leaf_tokens=settings.leaf_tokens,
        parent_tokens=settings.parent_tokens,
        structure=settings.structure,
        search_prefix=settings.search_prefix,
        encoder_variant=model.get("variant") or "optimized",
    )
    index._dim = model["dim"]
    for entry in manifest.shards:
        leaves = read_shard(entry.verified(root), ["doc_id", "vector"])
        trees = entry.verified(root, "trees")
        try:
            saved_docs = read_docs(read_shard(trees), str(trees))
        except ValueError as exc:
            raise InputError(f"{exc}; rerun the job") from exc
        if len(saved_docs) != entry.docs or leaves.num_rows != entry.rows:
            raise InputError(f"{trees}: its counts differ from the manifest's; rerun the job")
        _add_dataset_shard(index, saved_docs, leaves, threads)
    return index


def _add_dataset_shard(index: Index, saved_docs: list[Any], leaves: pa.Table, threads: int | None) -> None:
    """Adds one shard of a tree dataset: its documents' trees, its leaves' vectors labelled in order."""
    counts = [len(d.tree.leaves) for d in saved_docs]
    if sum(counts) != leaves.num_rows or leaves.column("doc_id").to_pylist() != [
        d.doc_id for d, n in zip(saved_docs, counts) for _ in range(n)
    ]:
        raise CorruptIndexError("a shard's leaves do not match its trees; rerun the job")
    if any(d.doc_id in index._slot_of for d in saved_docs):
        raise CorruptIndexError("the dataset lists a document id twice; rerun the job")
    labels = np.arange(index._next_label, index._next_label + leaves.num_rows, dtype=np.int64)
    column = leaves.column("vector").combine_chunks()
    vectors = column.values.to_numpy().reshape(len(column), column.type.list_size).astype(np.float32)
    if len(labels):
        if index._graph is None:
            index._graph = Graph(vectors.shape[1])
        index._graph.add(vectors, labels, threads)
        index._keep_vectors(labels, vectors)
    bounds = np.cumsum([0, *counts])
    saved: list[Saved] = [
        (d.tree.nodes, d.tree.leaves, labels[a:b], d.tree.sentences, d.tree.headings)
        for d, a, b in zip(saved_docs, bounds[:-1], bounds[1:])
    ]
    docs = {
        "doc_id": [d.doc_id for d in saved_docs],
        "source": [str(d.metadata.get("source", "")) for d in saved_docs],
        "text": [d.text for d in saved_docs],
        "metadata": [d.metadata for d in saved_docs],
    }
    index._add_saved(docs, saved)


ENCODER_SETTINGS = ("max_length", "pooling", "normalize")
"""The encoder options that change its vectors: what an index's manifest keeps of them."""


def encoder_config(encoder: Any) -> dict[str, Any] | None:
    """How to make ``encoder`` again for a saved index (its factory, model and variant, the
    options that change vectors; not threads or providers); None for an encoder without a
    recipe (the default model is then loaded).

    >>> from chunkforge.encoder import Encoder
    >>> encoder_config(Encoder.default())  # the variant this machine runs
    {'type': 'encoder', 'factory': 'default', 'args': [...], 'options': {}}
    """
    from .._config import to_config

    if getattr(encoder, "_recipe", None) is None:
        return None
    config: dict[str, Any] = to_config(encoder)
    config["options"] = {k: v for k, v in config["options"].items() if k in ENCODER_SETTINGS}
    return config
