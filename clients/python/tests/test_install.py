"""`pip install ./clients/python` installs a package that imports anywhere."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import venv

import pytest

from conftest import PACKAGE


def test_pip_installs_the_package(tmp_path):
    if importlib.util.find_spec("pip") is None or importlib.util.find_spec("setuptools") is None:
        pytest.skip("no pip or setuptools beside this Python")
    src = tmp_path / "src"
    shutil.copytree(PACKAGE, src, ignore=shutil.ignore_patterns("tests", "__pycache__", "*.egg-info", "build"))
    env = tmp_path / "venv"
    # The system's pip and setuptools (seen through system_site_packages) build
    # it: there is no package index to fetch them from.
    venv.EnvBuilder(with_pip=False, system_site_packages=True).create(str(env))
    py = str(env / "bin" / "python")
    subprocess.run(
        [py, "-m", "pip", "install", "--quiet", "--no-index", "--no-build-isolation", str(src)],
        check=True, cwd=str(tmp_path),
    )
    probe = (
        "import elector, elector.webhooks, os; print(elector.__file__); print(elector.Candidacy.__name__); "
        "print(os.path.exists(os.path.join(os.path.dirname(elector.__file__), 'py.typed')))"
    )
    out = subprocess.run([py, "-c", probe], check=True, cwd=str(tmp_path), capture_output=True, text=True).stdout.split()
    assert str(env) in out[0] and out[1:] == ["Candidacy", "True"]
    meta = subprocess.run([py, "-m", "pip", "show", "elector-client"], check=True, capture_output=True, text=True).stdout
    requires = [l for l in meta.splitlines() if l.startswith("Requires:")]
    assert requires == ["Requires: "] or requires == ["Requires:"], meta  # no dependency
