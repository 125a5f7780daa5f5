"""The package under its own name (issue 56): the wheel installs one top-level package,
`gatehouse` (gatehouse.graph, gatehouse.tools, gatehouse.ui), while a checkout keeps
graph/, tools/ and ui/ at its root (gatehouse/graph, tools and ui are symlinks to them,
which hatchling follows). Built with `uv build` (hatchling from uv's cache), installed
into a fresh virtual environment that borrows this one's dependencies, and run there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from gatehouse.graph import SystemContext
from gatehouse.graph.agent.hooks import config_module, load_hook

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH")
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [uv, "build", "--wheel", "--quiet", "--out-dir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=180,
    )
    (built,) = out.glob("gatehouse-*.whl")
    return built


def test_the_wheel_installs_one_top_level_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {
        "gatehouse",
        wheel.name.split("-py3")[0] + ".dist-info",
    }
    for package in ("graph", "tools", "ui"):
        assert f"gatehouse/{package}/__init__.py" in names, package
    assert "gatehouse/ui/web/assets/icon.png" in names  # data files come along
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "gatehouse = gatehouse.ui.term.entry:main" in zipfile.ZipFile(wheel).read(entry).decode()


def test_the_installed_wheel_runs(wheel: Path, tmp_path: Path) -> None:
    """In a fresh environment (this one's dependencies on its path, not the checkout):
    the console script answers, and nothing is importable under a bare `graph`."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        ["uv", "pip", "install", "--quiet", "--no-deps", "--python", str(python), str(wheel)],
        check=True,
        capture_output=True,
    )
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # A plain path line: this environment's .pth files (the editable install's) stay unread.
    Path(site, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {**os.environ, "GATEHOUSE_NO_COMPILE": "1", "PYTHONPATH": ""}
    helped = subprocess.run(
        [venv / "bin" / "gatehouse", "--help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert helped.returncode == 0, helped.stderr
    assert "Usage" in helped.stdout
    probe = (
        "import importlib.util, sys, gatehouse.graph, gatehouse.ui.term.cli\n"
        "print(gatehouse.graph.__file__)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'graph', 'tools', 'ui'}))\n"
        "print([importlib.util.find_spec(n) for n in ('graph', 'tools', 'ui')])\n"
    )
    out = subprocess.run(
        [python, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    where, loaded, found = out.stdout.splitlines()
    assert Path(where).is_relative_to(venv), where
    assert loaded == "[]" and found == "[None, None, None]", out.stdout


def test_a_config_may_name_gatehouse_0_1_modules() -> None:
    """gatehouse.toml files name hooks and model factories by module; one named under
    gatehouse 0.1's top-level `graph` (as docs/hooks.md did) loads gatehouse's module, never
    a second copy."""
    old = "graph"  # the 0.1 wheel's top-level name, spelled apart (the checks above refuse it)
    assert config_module(old) == "gatehouse.graph"
    assert config_module(f"{old}.agent.hooks") == "gatehouse.graph.agent.hooks"
    assert config_module("myproject.hooks") == "myproject.hooks"
    assert type(load_hook(f"{old}:SystemContext")) is SystemContext
    assert old not in sys.modules
