"""A user's script type-checks against chunkforge as its classes: the lazy exports of
``chunkforge/__init__.py`` (``Encoder``, ``Index``, ``chunkforge.bulk``, ...) are seen
by mypy as what they are, not as ``object``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy")

USER_SCRIPT = """
import chunkforge
from chunkforge import Encoder, Index, RecursiveChunker

enc = Encoder.default()
index = Index.load("my-index")
reveal_type(enc)
reveal_type(index)
reveal_type(chunkforge.Index.build)
reveal_type(chunkforge.bulk.run)
reveal_type(RecursiveChunker(enc).chunk("x"))
dim: int = enc.get_sentence_embedding_dimension()
vectors = enc.embed(["a", "b"])
wrong: str = enc.dim
"""


def test_lazy_exports_type_as_their_classes(tmp_path: Path) -> None:
    script = tmp_path / "user_script.py"
    script.write_text(USER_SCRIPT, encoding="utf-8")
    # chunkforge is found as a user's mypy finds it: installed (or editable) in this interpreter;
    # --follow-imports=silent: its own modules are read, not reported on
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--cache-dir", str(tmp_path / ".mypy")]
        + ["--no-incremental", script.name],
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")},
        capture_output=True,
        text=True,
        timeout=600,
    )
    revealed = [line.split("Revealed type is ", 1)[1] for line in run.stdout.splitlines() if "Revealed type" in line]
    assert revealed[:2] == ['"chunkforge.encoder.front.Encoder"', '"chunkforge.index.index.Index"'], run.stdout
    assert "chunkforge.index.index.Index" in revealed[2] and "chunkforge.bulk.progress.JobSummary" in revealed[3]
    assert revealed[4] == '"list[chunkforge.chunk.Chunk]"'
    errors = [line for line in run.stdout.splitlines() if ": error:" in line]
    # the one mistake in the script is found, with the precise types; nothing else is reported
    assert len(errors) == 1 and 'expression has type "int", variable has type "str"' in errors[0], run.stdout
