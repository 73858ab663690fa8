"""``python -m chunkforge``: the command line (see :mod:`chunkforge.cli`)."""

import sys

from .cli import main

sys.exit(main())
