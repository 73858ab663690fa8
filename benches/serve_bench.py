"""``chunkforge serve`` under load, against the same queries in process: queries/s and
p50/p99 latency at 1, 8 and 32 concurrent clients, the service's overhead per query
as a ratio, and hot reload under load (failed requests across ``--reloads`` saves).

The index holds the first documents of ``tests/data/docs-corpus.jsonl.gz`` up to
``--leaves`` leaves, with seeded random unit vectors for the leaves (as in
``query_latency.py``: neither latency nor load depends on what the vectors say);
questions are embedded for real, by the server and in process alike. Questions are
leaf sentences minus their first word; each request is ``Index.query`` with the
defaults (k 100, 1,000-token budget). In process: ``c`` threads calling
``index.query``. Served: ``chunkforge serve`` in its own process on a free loopback
port, ``c`` clients on one asyncio loop (httpx, keep-alive) in this process, so the
load generator shares the cores with the server. The two take turns in rounds, each
level ``--rounds`` times, so that load from elsewhere hits both alike. CPU time per
query (the server process's, read from ``/proc``; this process's, in process) is the
overhead figure that holds on a busy machine; the load generator's own is shown apart.

    python benches/serve_bench.py --leaves 20000 --queries 200 --reloads 10
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np

from chunkforge.encoder import Encoder
from chunkforge.index import Index
from query_latency import RandomLeaves

from bench_texts import corpus_documents


def in_process(index: Index, questions: list[str], clients: int) -> tuple[float, list[float]]:
    """Wall seconds and each query's latency, ``clients`` threads querying at once."""

    def one(q: str) -> float:
        t = time.perf_counter()
        index.query(q)
        return time.perf_counter() - t

    with ThreadPoolExecutor(clients) as pool:
        t0 = time.perf_counter()
        latencies = list(pool.map(one, questions))
        return time.perf_counter() - t0, latencies


async def served(url: str, questions: list[str], clients: int) -> tuple[float, list[float], int]:
    """Wall seconds, each answered query's latency, and the failed requests, ``clients`` at once."""
    queue = list(reversed(questions))
    latencies: list[float] = []
    failed = 0

    async def client(http: httpx.AsyncClient) -> None:
        nonlocal failed
        while queue:
            q = queue.pop()
            t = time.perf_counter()
            try:
                ok = (await http.post("/query", json={"question": q})).status_code == 200
            except httpx.HTTPError:
                ok = False
            if ok:
                latencies.append(time.perf_counter() - t)
            else:
                failed += 1

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as http:
        t0 = time.perf_counter()
        await asyncio.gather(*(client(http) for _ in range(clients)))
        return time.perf_counter() - t0, latencies, failed


async def reload_under_load(url: str, folder: Path, versions: list[Index], reloads: int, clients: int) -> str:
    """``clients`` querying without pause while ``reloads`` saves (taking turns between
    ``versions``) land in the served folder, each waited for until the service answers
    from it; the line of figures."""
    stop = asyncio.Event()
    latencies: list[float] = []
    answered_from: set[str] = set()
    failed = 0
    questions = ["how do I configure the driver", "which options are supported", "license terms"]

    async def client(http: httpx.AsyncClient, n: int) -> None:
        nonlocal failed
        while not stop.is_set():
            n += 1
            t = time.perf_counter()
            try:
                r = await http.post("/query", json={"question": questions[n % len(questions)]})
                ok = r.status_code == 200
            except httpx.HTTPError:
                ok = False
            if ok:
                latencies.append(time.perf_counter() - t)
                answered_from.add(r.json()["version"])
            else:
                failed += 1

    async with httpx.AsyncClient(base_url=url, timeout=60, limits=httpx.Limits(max_connections=clients)) as http:
        tasks = [asyncio.create_task(client(http, i)) for i in range(clients)]
        t0 = time.perf_counter()
        for i in range(reloads):
            await asyncio.to_thread(versions[i % len(versions)].save, folder)
            version = (folder / "CURRENT").read_text().strip()
            while (await http.get("/health")).json()["version"] != version:
                await asyncio.sleep(0.05)
        wall = time.perf_counter() - t0
        stop.set()
        await asyncio.gather(*tasks)
        stats = (await http.get("/stats")).json()
    ms = np.array(latencies) * 1e3
    return (
        f"{reloads} saves in {wall:.1f} s under {clients} clients: {len(latencies)} requests answered, "
        f"**{failed} failed**; {stats['reloads']} reloads, answers from {len(answered_from)} versions; "
        f"p50 {np.percentile(ms, 50):.1f} ms, p99 {np.percentile(ms, 99):.1f} ms"
    )


def process_cpu(pid: int) -> float:
    """CPU seconds (user and system) process ``pid`` has used (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server(folder: Path, *flags: str) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chunkforge",
            "serve",
            str(folder),
            "--port",
            str(port),
            "--reload-interval",
            "0.2",
            *flags,
        ],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(url + "/health").status_code == 200:
                return process, url
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("the server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--leaves", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200, help="queries per level and side in each round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--reloads", type=int, default=10)
    parser.add_argument("--threads", type=int, help="the server's --threads (default: its own)")
    args = parser.parse_args()
    encoder = RandomLeaves(Encoder.default())
    docs = corpus_documents(args.leaves)
    index = Index.build(docs, encoder)  # type: ignore[arg-type]
    smaller = Index.build(docs[: len(docs) * 9 // 10], encoder)  # type: ignore[arg-type]
    rng = random.Random(0)
    leaves = [h for h in index.leaves(score=0.0) if len(h.text) > 40]
    sentences = (" ".join(h.text.split()[1:20]) for h in rng.sample(leaves, min(2 * args.queries, len(leaves))))
    questions = [q for q in sentences if q][: args.queries]  # not a one-word leaf (a URL)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "index"
        index.save(folder)
        process, url = start_server(folder, *(["--threads", str(args.threads)] if args.threads else []))
        try:
            index.query(questions[0])
            asyncio.run(served(url, questions[:8], 1))  # warm both
            print(
                f"{index!r}; {len(questions)} questions, {args.rounds} rounds per level; os.cpu_count() {os.cpu_count()}"
            )
            print()
            print(
                "| clients | in process q/s | served q/s | q/s ratio | in process p50 / p99 ms "
                "| served p50 / p99 ms | p50 ratio | CPU ms/query in process | server | ratio | load generator | failed |"
            )
            print("|---|---|---|---|---|---|---|---|---|---|---|---|")
            for clients in args.clients:
                local: list[float] = []
                remote: list[float] = []
                wall = [0.0, 0.0]
                cpu = [0.0, 0.0, 0.0]  # in process; the server's; the load generator's
                failed = 0
                for _ in range(args.rounds):
                    c0 = time.process_time()
                    t, lat = in_process(index, questions, clients)
                    c1, s1 = time.process_time(), process_cpu(process.pid)
                    wall[0] += t
                    local += lat
                    t, lat, f = asyncio.run(served(url, questions, clients))
                    c2, s2 = time.process_time(), process_cpu(process.pid)
                    wall[1] += t
                    remote += lat
                    failed += f
                    cpu = [cpu[0] + c1 - c0, cpu[1] + s2 - s1, cpu[2] + c2 - c1]
                qps = [len(local) / wall[0], len(remote) / wall[1]]
                p = [np.percentile(np.array(x) * 1e3, [50, 99]) for x in (local, remote)]
                ms = [cpu[0] / len(local) * 1e3, cpu[1] / len(remote) * 1e3, cpu[2] / len(remote) * 1e3]
                print(
                    f"| {clients} | {qps[0]:.1f} | {qps[1]:.1f} | {qps[1] / qps[0]:.2f}x | {p[0][0]:.1f} / {p[0][1]:.1f} "
                    f"| {p[1][0]:.1f} / {p[1][1]:.1f} | {p[1][0] / p[0][0]:.2f}x | {ms[0]:.1f} | {ms[1]:.1f} "
                    f"| {ms[1] / ms[0]:.2f}x | {ms[2]:.1f} | {failed} |"
                )
            if args.reloads:
                print()
                print(asyncio.run(reload_under_load(url, folder, [smaller, index], args.reloads, 8)))
        finally:
            process.terminate()
            process.wait(timeout=30)


if __name__ == "__main__":
    main()
