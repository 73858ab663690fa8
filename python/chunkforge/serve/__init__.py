"""``chunkforge serve``: a query service over a saved index (``pip install "chunkforge[serve]"``).

The index is opened once per process, read-only; requests run concurrently in a
thread pool (the embedding and the native search and expansion release the GIL),
each under a timeout; when a new version of the index is saved into the folder,
the service switches to it between requests, and every answer names the version
it came from. ``POST /query``, ``/search``, ``/expand``, ``GET /health``,
``/stats``; the OpenAPI contract at ``/openapi.json`` (``docs/openapi.json``).
See ``docs/serve.md``.

>>> app = create_app(SavedIndexSource("my-index"))  # doctest: +SKIP
>>> ServiceClient("http://127.0.0.1:8000").query("how do I install it?").passages[0].text  # doctest: +SKIP
"""

from .app import Settings, create_app
from .client import ServedPassage, ServedPayload, ServiceClient, ServiceError
from .source import SavedIndex, SavedIndexSource, Servable, Source, SourceError

__all__ = [
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
    "create_app",
]
