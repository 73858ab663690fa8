"""What the service serves: a :class:`Servable` (anything with ``search``, ``expand``
and a ``version``) opened from a :class:`Source`, which also says, cheaply, which
version is the newest, so the service can switch when a new one appears.

:class:`SavedIndexSource` serves a folder written by :meth:`Index.save
<chunkforge.index.Index.save>`: its version is the folder ``CURRENT`` names.
:class:`StoreSource` serves a LanceDB store of :func:`~chunkforge.index.store.write_store`
(``embed-docs --index --lancedb``): its version is the store's latest commit.
:class:`DatasetSource` serves the bulk job's own output (``embed-docs --index``), read into
memory: its version is its manifest's hash. :func:`source_for` picks the one for a path, as
:func:`open_index` (what ``chunkforge query`` reads) does, so ``serve`` and ``query`` open
the same things.

>>> import tempfile
>>> from chunkforge.index import Index
>>> folder = tempfile.TemporaryDirectory()
>>> docs = [{"id": "guide.md", "text": "# Install\\n\\nRun pip install chunkforge."}, "Cats purr."]
>>> Index.build(docs).save(folder.name + "/my-index")  # its first version
>>> source = SavedIndexSource(folder.name + "/my-index")
>>> served = source.open(None)
>>> served.version, served.search("install", k=1)[0].doc_id
('v-000001', 'guide.md')
>>> folder.cleanup()
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .._io import MANIFEST
from .._recommended import RECOMMENDED
from ..errors import ChunkforgeError
from ..index.contract import Retriever
from ..index.options import spells_search_keywords

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..index import Hit, Index, Payload
    from ..index.filters import Filter
    from ..index.options import ExpandOptions, SearchKeywords
    from ..index.store import StoreIndex


class Servable(Retriever, Protocol):
    """An index the service can answer from: the index contract
    (:class:`~chunkforge.index.contract.Retriever`: ``search``, ``expand``, ``query``, each
    taking the ``filter`` the service holds a request to) and the version it holds."""

    @property
    def version(self) -> str: ...


class Source(Protocol):
    """Where servables come from: ``probe`` names the newest version (cheap: the service
    calls it every few seconds), ``open`` opens the newest, read-only; ``previous`` is the
    servable it replaces (None at the start), to reuse what can be (the encoder)."""

    def probe(self) -> str: ...

    def open(self, previous: Servable | None) -> Servable: ...


class SourceError(ChunkforgeError):
    """A source that cannot be opened (missing, foreign or corrupt); the message names it."""


class SavedIndex:
    """An opened index (an in-memory :class:`~chunkforge.index.Index`, or a
    :class:`~chunkforge.index.store.StoreIndex` at one commit) and the name of its version."""

    def __init__(self, index: Index | StoreIndex, version: str) -> None:
        self.index = index
        self.version = version

    @spells_search_keywords
    def search(self, query: str, k: int = 12, **keywords: Unpack[SearchKeywords]) -> list[Hit]:
        return self.index.search(query, k, **keywords)

    def expand(
        self,
        hits: Iterable[Hit],
        options: ExpandOptions | None = None,
        /,
        *,
        filter: Filter | None = None,
        **given: Any,
    ) -> Payload:
        return self.index.expand(hits, options, filter=filter, **given)

    def query(self, question: str, k: int = RECOMMENDED["k"], **options: Any) -> Payload:
        """Search and expansion in one call (the store answers both from one commit)."""
        return self.index.query(question, k, **options)

    @property
    def documents(self) -> int:
        return len(self.index)

    @property
    def leaves(self) -> int:
        return self.index.leaf_count


class SavedIndexSource:
    """A folder written by :meth:`Index.save <chunkforge.index.Index.save>`; a new save
    (a new ``v-NNNNNN`` folder, then ``CURRENT`` swapped) is a new version."""

    attempts = 3
    """Loads tried when saves keep replacing the version being read."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def probe(self) -> str:
        """The version ``CURRENT`` names (a regular file of a few bytes, read without blocking:
        a FIFO or ``/dev/zero`` put there is an error, not a stall)."""
        from ..index.storage import CorruptIndexError, version_folder

        try:
            return version_folder(self.path).name
        except CorruptIndexError as exc:
            raise SourceError(str(exc)) from exc

    def open(self, previous: Servable | None) -> SavedIndex:
        """Loads the version ``CURRENT`` names, with ``previous``'s encoder when it is one
        of these with the same model, and warms it up (one search), so the first request
        to it does not pay the loading."""
        from ..index import CorruptIndexError, Index

        reused = previous.index if isinstance(previous, SavedIndex) and isinstance(previous.index, Index) else None
        error: Exception | None = None
        for _ in range(self.attempts):
            version = self.probe()
            try:
                index = Index.load(self.path, reused.encoder if reused is not None else None)
            except (OSError, CorruptIndexError) as exc:
                error = exc  # a save removed the version being read: read the next one
                continue
            except ValueError as exc:  # built with another encoder (dim): load it with its own
                error, reused = exc, None
                continue
            if reused is not None and index.encoder_variant != reused.encoder_variant:
                reused = None
                continue
            if self.probe() == version:
                try:
                    _ = index.encoder
                except (ImportError, OSError, ValueError) as exc:
                    raise SourceError(f"cannot load the encoder of the index at {self.path}: {exc}") from exc
                index.search("warm up", k=1)
                return SavedIndex(index, version)
        raise SourceError(f"cannot open the index at {self.path}: {error or 'it changed while being read'}")


def commit_name(version: int) -> str:
    """A store commit's version as the service names it.

    >>> commit_name(12)
    'commit-000012'
    """
    return f"commit-{version:06d}"


class StoreSource:
    """A LanceDB store written by :func:`~chunkforge.index.store.write_store`; each commit of an
    update is a new version. Opening reads the trees and texts of the hit documents on demand,
    so a worker's memory stays what the store's indexes need."""

    def __init__(self, uri: str | os.PathLike[str]) -> None:
        self.uri = os.fspath(uri)

    def probe(self) -> str:
        """The name of the store's latest commit."""
        from ..index.store import latest_version

        try:
            version = latest_version(self.uri)
        except (OSError, ValueError, RuntimeError) as exc:
            raise SourceError(f"cannot read the store at {self.uri}: {exc}") from exc
        if version is None:
            raise SourceError(f"{self.uri} is not a chunkforge store (no commit)")
        return commit_name(version)

    def open(self, previous: Servable | None) -> SavedIndex:
        """Opens the latest commit, with ``previous``'s encoder when it is a store of the same
        model, and warms it up (one search)."""
        from ..index.store import StoreIndex

        reused = previous.index if isinstance(previous, SavedIndex) else None
        if not isinstance(reused, StoreIndex):
            reused = None
        try:
            index = StoreIndex(self.uri, reused.encoder if reused is not None else None)
            if reused is not None and index.model != reused.model:
                index = StoreIndex(self.uri)
            index.search("warm up", k=1)
        except (FileNotFoundError, ImportError, OSError, ValueError) as exc:
            raise SourceError(f"cannot open the store at {self.uri}: {exc}") from exc
        return SavedIndex(index, commit_name(index.version))


class DatasetSource:
    """The bulk job's tree dataset (``embed-docs --index``), read into an in-memory index
    without cutting or embedding again; each new manifest (a rerun of the job) is a new version."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def probe(self) -> str:
        """``dataset-`` and the first 12 hex digits of the manifest's SHA-256."""
        import hashlib

        try:
            data = (self.path / MANIFEST).read_bytes()
        except OSError as exc:
            raise SourceError(f"cannot read the dataset at {self.path}: {exc.strerror or exc}") from exc
        return "dataset-" + hashlib.sha256(data).hexdigest()[:12]

    def open(self, previous: Servable | None) -> SavedIndex:
        """Reads the dataset (with ``previous``'s encoder when it is one of these) and warms it up."""
        from ..index import Index

        reused = previous.index if isinstance(previous, SavedIndex) and isinstance(previous.index, Index) else None
        version = self.probe()
        try:
            index = Index.from_dataset(self.path, reused.encoder if reused is not None else None)
            index.search("warm up", k=1)
        except (OSError, ImportError, ValueError) as exc:
            raise SourceError(f"cannot open the dataset at {self.path}: {exc}") from exc
        return SavedIndex(index, version)


def is_dataset(path: str | os.PathLike[str]) -> bool:
    """A folder the bulk job wrote (its manifest), not a saved index (its ``CURRENT``)."""
    return (Path(path) / MANIFEST).is_file() and not (Path(path) / "CURRENT").exists()


def source_for(path: str | os.PathLike[str]) -> SavedIndexSource | StoreSource | DatasetSource:
    """The source of a LanceDB store (a folder with its commits table), of the bulk job's
    dataset folder (its manifest) or of a saved index folder."""
    from ..index.store import is_store

    if is_store(path):
        return StoreSource(path)
    return DatasetSource(path) if is_dataset(path) else SavedIndexSource(path)


def open_index(path: str | os.PathLike[str]) -> Index | StoreIndex:
    """The index at ``path``, whichever of the three :func:`source_for` tells apart (a store is
    opened, a dataset read into memory, a saved index loaded); SourceError naming it otherwise.

    >>> import tempfile
    >>> from chunkforge.index import Index
    >>> folder = tempfile.TemporaryDirectory()
    >>> Index.build([{"id": "guide.md", "text": "# Install\\n\\nRun pip install chunkforge."}]).save(folder.name + "/ix")
    >>> print(open_index(folder.name + "/ix").query("how do I install it?").render())
    [1] guide.md:0-38 (Install)
    # Install
    <BLANKLINE>
    Run pip install chunkforge.
    >>> folder.cleanup()
    """
    from ..index import CorruptIndexError, Index
    from ..index.store import is_store

    try:
        if is_store(path):
            return Index.open(path)
        return Index.from_dataset(path) if is_dataset(path) else Index.load(path)
    except (FileNotFoundError, CorruptIndexError, ValueError) as exc:
        raise SourceError(str(exc)) from exc
