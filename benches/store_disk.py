"""New questions whose sections come from the disk: a store's reader with the side's arrays
and graph in the page cache (this process holds them mapped and read, so that the host's
reclaim of unmapped pages leaves them) and its documents' sections not (``parts.arrow``
dropped from the page cache before each block). Each block of distinct questions gets a new
reader (an empty section cache); the blocks alternate :attr:`Side.prefetch
<chunkforge.index.store_side.Side.prefetch>` off and on, so the two are measured in turn, in
one process, on the same disk. Reports each block's p50 and what it read (``/proc/self/io``:
read calls, bytes from the disk) and, over the blocks, each setting's p50 and mean. Linux only
(``posix_fadvise``, ``/proc``).

    python benches/store_growth.py --leaves 10000000 --no-memory --workdir DIR
    python benches/store_disk.py DIR/s10000000 --blocks 16 --block 25 --skip 62000
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np

from chunkforge.encoder import Encoder
from chunkforge.index import Index
from chunkforge.index.store_side import Side

from store_growth import distinct_questions


def held_in_memory(folder: Path) -> list[np.memmap]:
    """The side's arrays and graph mapped and each of their pages read (keep the maps)."""
    maps = []
    for path in sorted(folder.iterdir()):
        if path.suffix in (".npy", ".usearch"):
            m = np.memmap(path, np.uint8, "r")
            for at in range(0, len(m), 1 << 26):
                int(m[at : at + (1 << 26) : 4096].sum())
            maps.append(m)
    return maps


def cpu_name() -> str:
    """The CPU's model name (Linux's ``/proc/cpuinfo``)."""
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    return names[0] if names else platform.machine()


def read_so_far() -> tuple[int, int]:
    """This process's read calls and bytes read from the disk."""
    with open("/proc/self/io", encoding="ascii") as f:
        counts = dict(line.split(": ") for line in f.read().split("\n") if line)
    return int(counts["syscr"]), int(counts["read_bytes"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=Path, help="a store written with its side")
    parser.add_argument("--blocks", type=int, default=16, help="blocks of questions (even: each setting as often)")
    parser.add_argument("--block", type=int, default=25, help="distinct questions a block")
    parser.add_argument("--skip", type=int, default=0, help="questions left out first (new to a store asked before)")
    args = parser.parse_args()
    encoder = Encoder.default("optimized")
    index = Index.open(args.store, encoder)
    side = index._now.side
    if side is None:
        raise SystemExit(f"{args.store}: no side to read (write the store with its side)")
    index.query("warm up")
    held = held_in_memory(side.folder)
    parts = os.open(side.folder / "parts.arrow", os.O_RDONLY)
    questions = distinct_questions(args.skip + args.blocks * args.block)[args.skip :]
    times: dict[bool, list[float]] = {False: [], True: []}
    read: dict[bool, list[tuple[int, int]]] = {False: [], True: []}
    print(f"{cpu_name()}, {os.cpu_count()} CPUs; the side's {len(held)} files held in memory\n")
    print("| block | prefetch | p50 ms | read calls a question | KiB from the disk a question |")
    print("| ---: | --- | ---: | ---: | ---: |")
    for b in range(args.blocks):
        Side.prefetch = b % 2 == 1
        reader = Index.open(args.store, encoder)
        reader.query("warm up")  # its first question opens what a new reader opens
        os.posix_fadvise(parts, 0, 0, os.POSIX_FADV_DONTNEED)
        block, took = questions[b * args.block : (b + 1) * args.block], []
        calls, disk = read_so_far()
        for q in block:
            t = time.perf_counter()
            reader.query(q)
            took.append(1000 * (time.perf_counter() - t))
        calls2, disk2 = read_so_far()
        times[Side.prefetch] += took
        read[Side.prefetch].append(((calls2 - calls) // len(block), (disk2 - disk) // len(block)))
        print(
            f"| {b} | {'on' if Side.prefetch else 'off'} | {np.median(took):.1f} | {(calls2 - calls) / len(block):.0f} "
            f"| {(disk2 - disk) / len(block) / 1024:.0f} |",
            flush=True,
        )
    print("\n| prefetch | p50 ms | mean ms | KiB from the disk a question |")
    print("| --- | ---: | ---: | ---: |")
    for on in (False, True):
        kib = np.mean([d for _, d in read[on]]) / 1024
        print(f"| {'on' if on else 'off'} | {np.median(times[on]):.1f} | {np.mean(times[on]):.1f} | {kib:.0f} |")
    on, off = np.median(times[True]), np.median(times[False])
    print(f"\np50 on / off: {on / off:.2f}x ({len(times[True])} questions each)")


if __name__ == "__main__":
    main()
