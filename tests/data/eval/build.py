"""Builds the labelled evaluation set from ``../docs-corpus-small.jsonl.gz``:
``corpus.jsonl`` (5 labelled documents and 15 unlabelled distractors, unchanged) and
``queries.jsonl`` (questions written by reading the 5 documents; each evidence span
is an exact quote, located here by a whitespace-insensitive search that must match
exactly once, and stored with its text so that the loader re-checks it).

Run from the repository root: ``python tests/data/eval/build.py``.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

HERE = Path(__file__).parent
MUTEX = "linux-doc-6.1/locking/mutex-design.rst"
ZSWAP = "linux-doc-6.1/admin-guide/mm/zswap.rst"
SHELVE = "python3.11-doc/library/shelve.rst.txt"
COMMIT = "git-doc/git-commit-tree.txt"
RAMOOPS = "linux-doc-6.1/admin-guide/ramoops.rst"
LABELLED = [MUTEX, ZSWAP, SHELVE, COMMIT, RAMOOPS]
DISTRACTORS = [
    "linux-doc-6.1/process/code-of-conduct-interpretation.rst",
    "linux-doc-6.1/driver-api/mei/mei-client-bus.rst",
    "linux-doc-6.1/x86/amd-memory-encryption.rst",
    "linux-doc-6.1/dev-tools/kunit/tips.rst",
    "linux-doc-6.1/block/biovecs.rst",
    "linux-doc-6.1/x86/tlb.rst",
    "linux-doc-6.1/virt/kvm/x86/hypercalls.rst",
    "linux-doc-6.1/x86/xstate.rst",
    "python3.11-doc/library/plistlib.rst.txt",
    "linux-doc-6.1/core-api/timekeeping.rst",
    "linux-doc-6.1/driver-api/sync_file.rst",
    "python3.11-doc/c-api/dict.rst.txt",
    "git-doc/git-merge-index.txt",
    "git-doc/git-write-tree.txt",
    "linux-doc-6.1/trace/uprobetracer.rst",
]

# (type, question, [(doc, quote), ...]); "multi": two places of one document,
# "multi-doc": two documents, "unanswerable": the corpus does not say.
QUERIES: list[tuple[str, str, list[tuple[str, str]]]] = [
    (
        "factoid",
        "What does the owner field of a kernel mutex contain?",
        [
            (
                MUTEX,
                "Field owner actually contains `struct task_struct *` to the current lock owner and it is therefore NULL if not currently owned.",
            )
        ],
    ),
    (
        "factoid",
        "How many low bits of the mutex owner pointer hold extra state?",
        [
            (
                MUTEX,
                "Since task_struct pointers are aligned to at least L1_CACHE_BYTES, low bits (3) are used to store extra state (e.g., if waiter list is non-empty).",
            )
        ],
    ),
    (
        "factoid",
        "What does the mutex fastpath do?",
        [
            (
                MUTEX,
                "(i) fastpath: tries to atomically acquire the lock by cmpxchg()ing the owner with the current task. This only works in the uncontended case",
            )
        ],
    ),
    (
        "factoid",
        "Why does a waiter spin on a mutex while its owner is running?",
        [(MUTEX, "The rationale is that if the lock owner is running, it is likely to release the lock soon.")],
    ),
    (
        "factoid",
        "Who proposed the MCS lock?",
        [
            (
                MUTEX,
                "The MCS lock (proposed by Mellor-Crummey and Scott) is a simple spinlock with the desirable properties of being fair",
            )
        ],
    ),
    (
        "factoid",
        "In which task state does a task sleep in the mutex slowpath?",
        [(MUTEX, "Under normal circumstances it blocks as TASK_UNINTERRUPTIBLE.")],
    ),
    (
        "factoid",
        "Can mutexes be used in interrupt context?",
        [(MUTEX, "Mutexes may not be used in hardware or software interrupt contexts such as tasklets and timers.")],
    ),
    (
        "factoid",
        "How big is struct mutex on x86-64 compared with a semaphore?",
        [(MUTEX, "E.g: on x86-64 it is 32 bytes, where 'struct semaphore' is 24 bytes and rw_semaphore is 40 bytes.")],
    ),
    (
        "factoid",
        "When are the mutex semantics fully enforced?",
        [(MUTEX, "These semantics are fully enforced when CONFIG DEBUG_MUTEXES is enabled.")],
    ),
    (
        "multi",
        "Where is struct mutex defined and how is a mutex initialized dynamically?",
        [
            (MUTEX, "Mutexes are represented by 'struct mutex', defined in include/linux/mutex.h"),
            (MUTEX, "Dynamically initialize the mutex::\n\n   mutex_init(mutex);"),
        ],
    ),
    (
        "multi",
        "Which mutex call locks only when a counter drops to zero, and which tests whether a mutex is taken?",
        [
            (MUTEX, "int atomic_dec_and_mutex_lock(atomic_t *cnt, struct mutex *lock);"),
            (MUTEX, "int mutex_is_locked(struct mutex *lock);"),
        ],
    ),
    ("factoid", "What is zswap?", [(ZSWAP, "Zswap is a lightweight compressed cache for swap pages.")]),
    (
        "factoid",
        "How do I enable zswap at runtime?",
        [
            (
                ZSWAP,
                "Zswap can also be enabled and disabled at runtime using the sysfs interface. An example command to enable zswap at runtime, assuming sysfs is mounted at ``/sys``, is::\n\n\techo 1 > /sys/module/zswap/parameters/enabled",
            )
        ],
    ),
    (
        "factoid",
        "What compression ratio does the zbud zpool give?",
        [
            (
                ZSWAP,
                "The zbud type zpool allocates exactly 1 page to store 2 compressed pages, which means the compression ratio will always be 2:1 or worse (because of half-full zbud pages).",
            )
        ],
    ),
    (
        "factoid",
        "Why can zswap not evict pages when it uses zsmalloc?",
        [
            (
                ZSWAP,
                "However, zsmalloc does not implement compressed page eviction, so once zswap fills it cannot evict the oldest page, it can only reject new pages.",
            )
        ],
    ),
    (
        "factoid",
        "What data structure maps swap entries to zpool handles in zswap?",
        [(ZSWAP, "This mapping is achieved with a red-black tree per swap type.")],
    ),
    (
        "factoid",
        "How do I choose the zswap compressor at boot time?",
        [
            (
                ZSWAP,
                "it can be overridden at boot time by setting the ``compressor`` attribute, e.g. ``zswap.compressor=lzo``.",
            )
        ],
    ),
    (
        "factoid",
        "What happens to compressed pages when the zswap compressor is changed at runtime?",
        [
            (
                ZSWAP,
                "When the zpool and/or compressor parameter is changed at runtime, any existing compressed pages are not modified; they are left in their own zpool.",
            )
        ],
    ),
    (
        "factoid",
        "How does zswap store a page filled with one repeated value?",
        [
            (
                ZSWAP,
                "If true, the compressed length of the page is set to zero and the pattern or same-filled value is stored.",
            )
        ],
    ),
    (
        "factoid",
        "What does setting accept_threshold_percent to 100 do?",
        [(ZSWAP, "Setting this parameter to 100 will disable the hysteresis.")],
    ),
    (
        "factoid",
        "Which zswap policy can the user control through sysfs?",
        [(ZSWAP, "* max_pool_percent - The maximum percentage of memory that the compressed pool can occupy.")],
    ),
    (
        "multi",
        "Which boot parameters turn off zswap's same-filled page detection and its storage of other pages?",
        [
            (
                ZSWAP,
                "Same-value filled pages identification feature is enabled by default and can be disabled at boot time by setting the ``same_filled_pages_enabled`` attribute to 0, e.g. ``zswap.same_filled_pages_enabled=0``.",
            ),
            (
                ZSWAP,
                "can be disabled by setting the ``non_same_filled_pages_enabled`` attribute to 0, e.g. ``zswap.non_same_filled_pages_enabled=0``.",
            ),
        ],
    ),
    (
        "multi",
        "How does zswap help overcommitted guests and SSD users?",
        [
            (
                ZSWAP,
                "Overcommitted guests that share a common I/O resource can dramatically reduce their swap I/O pressure",
            ),
            (
                ZSWAP,
                "Users with SSDs as swap devices can extend the life of the device by drastically reducing life-shortening writes.",
            ),
        ],
    ),
    (
        "multi",
        "Can the keys of a shelf be arbitrary Python objects?",
        [
            (SHELVE, "the values (not the keys!) in a shelf can be essentially arbitrary Python objects"),
            (SHELVE, "The keys are ordinary strings."),
        ],
    ),
    (
        "factoid",
        "What is the downside of opening a shelf with writeback=True?",
        [
            (
                SHELVE,
                "if many entries are accessed, it can consume vast amounts of memory for the cache, and it can make the close operation very slow since all accessed entries are written back",
            )
        ],
    ),
    (
        "factoid",
        "Is it safe to load a shelf from an untrusted source?",
        [
            (
                SHELVE,
                "Because the :mod:`shelve` module is backed by :mod:`pickle`, it is insecure to load a shelf from an untrusted source.  Like with pickle, loading a shelf can execute arbitrary code.",
            )
        ],
    ),
    (
        "factoid",
        "Can two programs write to the same shelf at once?",
        [(SHELVE, "The :mod:`shelve` module does not support *concurrent* read/write access to shelved objects.")],
    ),
    (
        "factoid",
        "What does Shelf.sync do?",
        [
            (
                SHELVE,
                "Write back all entries in the cache if the shelf was opened with *writeback* set to :const:`True`.  Also empty the cache and synchronize the persistent dictionary on disk, if feasible.",
            )
        ],
    ),
    (
        "factoid",
        "Which extra methods does BsdDbShelf expose?",
        [
            (
                SHELVE,
                "which exposes :meth:`first`, :meth:`!next`, :meth:`previous`, :meth:`last` and :meth:`set_location`",
            )
        ],
    ),
    (
        "multi",
        "Why is appending to a list stored in a shelf lost without writeback?",
        [
            (SHELVE, "By default modified objects are written *only* when assigned to the shelf"),
            (SHELVE, "d['xx'].append(3)          # *this doesn't!* -- d['xx'] is STILL [0, 1, 2]!"),
        ],
    ),
    (
        "factoid",
        "What changed in shelve.open in Python 3.11?",
        [(SHELVE, ".. versionchanged:: 3.11\n      Accepts :term:`path-like object` for filename.")],
    ),
    (
        "factoid",
        "What is the keyencoding parameter of Shelf for?",
        [
            (
                SHELVE,
                "The *keyencoding* parameter is the encoding used to encode keys before they are used with the underlying dict.",
            )
        ],
    ),
    (
        "factoid",
        "Where does git commit-tree read the commit message from?",
        [(COMMIT, "The log message is read from the standard input, unless `-m` or `-F` options are given.")],
    ),
    (
        "factoid",
        "How many parents can a git commit object have?",
        [
            (
                COMMIT,
                "A commit object may have any number of parents. With exactly one parent, it is an ordinary commit. Having more than one parent makes the commit a merge between several lines of history.",
            )
        ],
    ),
    (
        "factoid",
        "What is --no-gpg-sign for in git commit-tree?",
        [(COMMIT, "`--no-gpg-sign` is useful to countermand a `--gpg-sign` option given earlier on the command line.")],
    ),
    (
        "multi",
        "How do several -m and -F options of git commit-tree combine?",
        [
            (COMMIT, "The commit log message will be composed in the order in which the options are given."),
            (COMMIT, "This can be given more than once and the content of each file becomes its own paragraph."),
        ],
    ),
    (
        "factoid",
        "What is ramoops?",
        [(RAMOOPS, "Ramoops is an oops/panic logger that writes its logs to RAM before the system crashes.")],
    ),
    (
        "factoid",
        "What does ramoops mem_type=2 do?",
        [
            (
                RAMOOPS,
                "Setting ``mem_type=2`` attempts to treat the memory region as normal memory, which enables full cache on it.",
            )
        ],
    ),
    (
        "factoid",
        "How should max_reason be set so that ramoops stores only panics?",
        [(RAMOOPS, "to store only Panics ``max_reason`` should be set to 1 (KMSG_DUMP_PANIC).")],
    ),
    (
        "factoid",
        "What are the ramoops record files in pstore called?",
        [(RAMOOPS, "The format for these files is ``dmesg-ramoops-N``, where N is the record number in memory.")],
    ),
    (
        "factoid",
        "Where does ramoops keep the persistent function trace?",
        [(RAMOOPS, "The functions call chain log is stored in a ``ftrace-ramoops`` file.")],
    ),
    (
        "multi",
        "How do I reserve ECC-protected memory for ramoops on the kernel command line?",
        [
            (RAMOOPS, "Ramoops also supports software ECC protection of persistent memory regions."),
            (RAMOOPS, "mem=128M ramoops.mem_address=0x8000000 ramoops.ecc=1"),
        ],
    ),
    (
        "multi-doc",
        "Which files switch zswap's compressor at runtime and turn on ramoops function tracing?",
        [
            (ZSWAP, "echo lzo > /sys/module/zswap/parameters/compressor"),
            (RAMOOPS, "# echo 1 > /sys/kernel/debug/pstore/record_ftrace"),
        ],
    ),
    (
        "multi-doc",
        "Which of mutexes and shelves may be used from several tasks or programs at once?",
        [
            (MUTEX, "Only one task can hold the mutex at a time."),
            (SHELVE, "(Multiple simultaneous read accesses are safe.)"),
        ],
    ),
    ("unanswerable", "How do I set the zstd compression level used by zswap?", []),
    ("unanswerable", "What is the default timeout of mutex_lock?", []),
    ("unanswerable", "How do I compact a shelve database file to reclaim disk space?", []),
    ("unanswerable", "Which SSH key types can git commit-tree sign with?", []),
]


def locate(text: str, quote: str) -> tuple[int, int]:
    """The one place ``quote`` occurs in ``text``, runs of whitespace matching any whitespace."""
    pattern = r"\s+".join(map(re.escape, quote.split()))
    found = [m.span() for m in re.finditer(pattern, text)]
    if len(found) != 1:
        raise SystemExit(f"quote found {len(found)} times, expected once: {quote!r}")
    return found[0]


def main() -> None:
    with gzip.open(HERE.parent / "docs-corpus-small.jsonl.gz", "rt", encoding="utf-8") as f:
        docs = {d["id"]: d for d in map(json.loads, f)}
    with open(HERE / "corpus.jsonl", "w", encoding="utf-8", newline="\n") as out:
        for doc_id in LABELLED + DISTRACTORS:
            d = docs[doc_id]
            out.write(
                json.dumps({"doc_id": doc_id, "source": d["source"], "text": d["text"]}, ensure_ascii=False) + "\n"
            )
    with open(HERE / "queries.jsonl", "w", encoding="utf-8", newline="\n") as out:
        for n, (kind, question, quotes) in enumerate(QUERIES, 1):
            refs = []
            for doc_id, quote in quotes:
                start, end = locate(docs[doc_id]["text"], quote)
                refs.append({"doc_id": doc_id, "start": start, "end": end, "text": docs[doc_id]["text"][start:end]})
            record = {"id": f"q{n:02d}", "query": question, "type": kind, "references": refs}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
