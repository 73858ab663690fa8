"""How the question's ONNX Runtime threads wait: latency and CPU per question.

``Encoder.embed_query`` runs a CPU session of its own with two intra-op threads. Between
operators, and after a call, an idle thread either sleeps at once, spins for ONNX Runtime's
default time (long after the call), or spins ``QUERY_SPIN_US`` then sleeps (the default).
Each variant embeds the same 19-word bench questions (leaf sentences of the corpus minus
their first word) one after another, with ``--gaps`` ms idle between questions (0: a
saturated service; 20: one that is not). The variants take turns in rounds, so that load
changes hit them alike. CPU is the process's, per question, idle time included (what
spinning costs the machine).

    python benches/query_spin.py --questions 150 --rounds 3 --gaps 0 5 20
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from chunkforge import encoder as enc
from chunkforge.chunkers import SentenceChunker
from chunkforge.encoder import graph, onnxruntime

from bench_texts import corpus_documents


def sessions(encoder: enc.Encoder) -> dict[str, object]:
    """The three ways of waiting, on the query session's graph (pooled output) and threads."""
    model = graph.with_pooled_output(
        graph.load_graph(encoder.graph), encoder._output, encoder.pooling, encoder.normalize
    )
    ways = {f"spin {enc.QUERY_SPIN_US} us, then sleep (default)": enc.QUERY_SPIN_US, "sleep at once": 0}
    made = {
        name: onnxruntime.session(encoder.graph, encoder.providers, enc.QUERY_THREADS, 1, model, spin_us=us)
        for name, us in ways.items()
    }
    made["ONNX Runtime's spinning"] = onnxruntime.session(encoder.graph, encoder.providers, enc.QUERY_THREADS, 1, model)
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gaps", type=float, nargs="+", default=[0.0, 5.0, 20.0], help="ms idle between questions")
    args = parser.parse_args()
    encoder = enc.Encoder.default()
    rng = random.Random(0)
    sentences = [
        c.text for d in corpus_documents(3000) for c in SentenceChunker(encoder.tokenizer, 64).chunk(d["text"])
    ]
    questions = [" ".join(s.split()[1:20]) for s in rng.sample([s for s in sentences if len(s) > 40], args.questions)]
    made = sessions(encoder)
    reference = None
    for gap in args.gaps:
        wall: dict[str, list[float]] = {name: [] for name in made}
        cpu: dict[str, float] = {name: 0.0 for name in made}
        for r in range(args.rounds):
            names = list(made) if r % 2 == 0 else list(reversed(made))
            for name in names:
                session = made[name]
                for q in questions[:10]:
                    encoder._run(
                        session, *encoder.tokenizer.encode_padded([q], encoder.max_length)[:2], enc.POOLED_OUTPUT
                    )
                c0 = time.process_time()
                for q in questions:
                    ids, mask = encoder.tokenizer.encode_padded([q], encoder.max_length)[:2]
                    t0 = time.perf_counter()
                    vector = encoder._run(session, ids, mask, enc.POOLED_OUTPUT)
                    wall[name].append(time.perf_counter() - t0)
                    time.sleep(gap / 1e3)
                cpu[name] += time.process_time() - c0
                reference = vector if reference is None else reference
                assert np.array_equal(vector, reference), "the ways of waiting must not change the vector"
        print(f"{gap:g} ms between questions ({len(questions)} questions x {args.rounds} rounds):")
        for name in made:
            a = np.array(wall[name]) * 1e3
            print(
                f"  {name:32s} p50 {np.percentile(a, 50):5.2f} ms  p99 {np.percentile(a, 99):6.2f} ms  "
                f"CPU {cpu[name] / len(a) * 1e3:5.2f} ms a question"
            )


if __name__ == "__main__":
    main()
