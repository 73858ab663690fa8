"""New questions whose sections come from the disk: a store's reader with the side's arrays
and graph in the page cache (this process holds them mapped and read, so that the host's
reclaim of unmapped pages leaves them) and its documents' sections not. Each block of distinct
questions is asked twice, :attr:`Side.prefetch <chunkforge.index.store_side.Side.prefetch>` off
and on (off first in even blocks, on first in odd ones), each time by a new reader (an empty
section cache) after ``parts.arrow`` is dropped from the page cache, so nothing of the first
asking is left to the second. Reports each block's p50 and what it read (``/proc/self/io``:
read calls, bytes from the disk), each setting's p50 and mean, and the median over the
questions of each one's time on / off. Each setting answers every question once, first for
half of them: a disk behind a virtual machine may cache on its host what the first asking read,
so compare the positions (asked first, asked second) as well as the totals. Linux only
(``posix_fadvise``, ``/proc``).

    python benches/store_growth.py --leaves 10000000 --no-memory --workdir DIR
    python benches/store_disk.py DIR/s10000000 --blocks 8 --block 25 --skip 63000
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from chunkforge.encoder import Encoder
from chunkforge.index import Index
from chunkforge.index.store_side import Side
from embed_bench import cpu_name

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


def read_so_far() -> tuple[int, int]:
    """This process's read calls and bytes read from the disk."""
    with open("/proc/self/io", encoding="ascii") as f:
        counts = dict(line.split(": ") for line in f.read().split("\n") if line)
    return int(counts["syscr"]), int(counts["read_bytes"])


def asked(store: Path, encoder: Encoder, parts: int, questions: list[str]) -> tuple[list[float], int, int]:
    """Each question's ms, asked by a new reader with ``parts`` (the side's sections) dropped from
    the page cache first, and the read calls and bytes from the disk it took."""
    reader = Index.open(store, encoder)
    reader.query("warm up")  # its first question opens what a new reader opens
    os.posix_fadvise(parts, 0, 0, os.POSIX_FADV_DONTNEED)
    calls, disk = read_so_far()
    took = []
    for q in questions:
        t = time.perf_counter()
        reader.query(q)
        took.append(1000 * (time.perf_counter() - t))
    calls2, disk2 = read_so_far()
    return took, calls2 - calls, disk2 - disk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=Path, help="a store written with its side")
    parser.add_argument("--blocks", type=int, default=8, help="blocks of questions (even: each setting first as often)")
    parser.add_argument("--block", type=int, default=25, help="distinct questions a block")
    parser.add_argument("--skip", type=int, default=0, help="questions left out first (new to a store asked before)")
    args = parser.parse_args()
    encoder = Encoder.default("optimized")
    index = Index.open(args.store, encoder)
    side = index._now.side
    if side is None or side.part_offset is None:
        raise SystemExit(f"{args.store}: no side of format 5 to read (write the store again)")
    index.query("warm up")
    held = held_in_memory(side.folder)
    parts = os.open(side.folder / "parts.arrow", os.O_RDONLY)
    questions = distinct_questions(args.skip + args.blocks * args.block)[args.skip :]
    times: dict[bool, list[float]] = {False: [], True: []}
    kib: dict[bool, list[float]] = {False: [], True: []}
    by_position: dict[tuple[bool, int], list[float]] = {(on, i): [] for on in (False, True) for i in (0, 1)}
    print(f"{cpu_name()}, {os.cpu_count()} CPUs; the side's {len(held)} files held in memory\n")
    print("| block | prefetch | p50 ms | read calls a question | KiB from the disk a question |")
    print("| ---: | --- | ---: | ---: | ---: |")
    for b in range(args.blocks):
        block = questions[b * args.block : (b + 1) * args.block]
        for position, on in enumerate((False, True) if b % 2 == 0 else (True, False)):
            Side.prefetch = on
            took, calls, disk = asked(args.store, encoder, parts, block)
            times[on] += took
            by_position[on, position] += took
            kib[on].append(disk / len(block) / 1024)
            setting = "on" if on else "off"
            print(
                f"| {b} | {setting} | {np.median(took):.1f} | {calls / len(block):.0f} | {kib[on][-1]:.0f} |",
                flush=True,
            )
    print("\n| prefetch | p50 ms | mean ms | KiB from the disk a question |")
    print("| --- | ---: | ---: | ---: |")
    for on in (False, True):
        print(
            f"| {'on' if on else 'off'} | {np.median(times[on]):.1f} | {np.mean(times[on]):.1f} | {np.mean(kib[on]):.0f} |"
        )
    print("\n| position | prefetch off p50 ms | on p50 ms | on / off |")
    print("| --- | ---: | ---: | ---: |")
    for i, name in enumerate(("asked first", "asked second")):
        off, on = np.median(by_position[False, i]), np.median(by_position[True, i])
        print(f"| {name} | {off:.1f} | {on:.1f} | {on / off:.2f}x |")
    ratios = np.array(times[True]) / np.array(times[False])
    print(
        f"\np50 on / off: {np.median(times[True]) / np.median(times[False]):.2f}x; each question's on / off: median "
        f"{np.median(ratios):.2f}x, faster on for {np.mean(ratios < 1):.0%} of {len(ratios)} questions"
    )


if __name__ == "__main__":
    main()
