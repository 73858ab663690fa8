"""Progress bars (tqdm on stderr): shown on a terminal unless asked otherwise."""

from __future__ import annotations

import sys
from typing import Any

from tqdm import tqdm


def progress(show: bool | None = None, **options: Any) -> tqdm:
    """A tqdm bar on stderr. ``show``: True always, False never, None (the
    default) only when stderr is a terminal, so logs and pipes stay clean."""
    enabled = sys.stderr.isatty() if show is None else bool(show)
    return tqdm(file=sys.stderr, disable=not enabled, dynamic_ncols=True, **options)
