"""``chunkforge serve``: a query service over a saved index (``pip install "chunkforge[serve]"``).

The index is opened once per process, read-only; requests run concurrently in a
thread pool (the embedding and the native search and expansion release the GIL),
each under a timeout; when a new version of the index is saved into the folder,
the service switches to it between requests, and every answer names the version
it came from. ``POST /query``, ``/search``, ``/expand``, ``GET /health``,
``/stats``; the OpenAPI contract at ``/openapi.json`` (``docs/openapi.json``).
See ``docs/serve.md``. The names are imported on first use, so the client (and the
framework retrievers) need neither FastAPI nor uvicorn.

>>> import tempfile
>>> from chunkforge.index import Index
>>> from chunkforge.serve import SavedIndexSource, ServiceClient, create_app
>>> folder = tempfile.TemporaryDirectory()
>>> Index.build([{"id": "guide.md", "text": "# Install\\n\\nRun pip install chunkforge."}]).save(folder.name + "/my-index")
>>> app = create_app(SavedIndexSource(folder.name + "/my-index"))  # uvicorn.run(app) serves it
>>> folder.cleanup()
>>> payload = ServiceClient("http://127.0.0.1:8000").query("how do I install it?")  # a running chunkforge serve
>>> payload.token_count <= 1000 and len(payload.passages) > 0
True
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import Settings, create_app
    from .client import ServedPassage, ServedPayload, ServiceClient, ServiceError
    from .source import (
        DatasetSource,
        SavedIndex,
        SavedIndexSource,
        Servable,
        Source,
        SourceError,
        StoreSource,
        open_index,
        source_for,
    )

_MODULES = {
    "Settings": ".app",
    "create_app": ".app",
    "ServedPassage": ".client",
    "ServedPayload": ".client",
    "ServiceClient": ".client",
    "ServiceError": ".client",
    "DatasetSource": ".source",
    "open_index": ".source",
    "SavedIndex": ".source",
    "SavedIndexSource": ".source",
    "Servable": ".source",
    "Source": ".source",
    "SourceError": ".source",
    "StoreSource": ".source",
    "source_for": ".source",
}


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_MODULES[name], __name__), name)


__all__ = [
    "DatasetSource",
    "open_index",
    "SavedIndex",
    "SavedIndexSource",
    "Servable",
    "ServedPassage",
    "ServedPayload",
    "ServiceClient",
    "ServiceError",
    "Settings",
    "Source",
    "SourceError",
    "StoreSource",
    "source_for",
    "create_app",
]
