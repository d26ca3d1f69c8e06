"""The README's Python program leads, and resigns on SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading

import pytest

import elector
from conftest import PACKAGE, REPO, wait_until


def block(name: str, lang: str) -> str:
    readme = (REPO / "README.md").read_text()
    m = re.search(r"<!-- readme: %s -->\n```%s\n(.*?)```" % (re.escape(name), lang), readme, re.S)
    assert m, "README.md has no %s block marked <!-- readme: %s -->" % (lang, name)
    return m.group(1)


def test_the_readme_program_leads_and_resigns_on_sigterm(gateway, tmp_path):
    program = block("python", "python")
    assert len(program.strip().splitlines()) <= 20
    assert "http://127.0.0.1:8080" in program and '"billing"' in program
    election = "readme-%d" % os.getpid()
    path = tmp_path / "lead.py"
    path.write_text(program.replace("http://127.0.0.1:8080", gateway.url).replace('"billing"', '"%s"' % election))
    env = dict(os.environ, PYTHONPATH=str(PACKAGE))
    p = subprocess.Popen([sys.executable, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                         cwd=str(tmp_path))
    lines = []

    def read() -> None:
        for line in p.stdout:  # type: ignore[union-attr]
            lines.append(line.decode())

    threading.Thread(target=read, daemon=True).start()
    try:
        wait_until("the program leads and works", lambda: any(l.startswith("billing, term 1") for l in lines), timeout=20)
        c = elector.Client(gateway.url)
        assert c.leader(election).term == 1
        p.send_signal(signal.SIGTERM)
        assert p.wait(20) == 0, p.stderr.read().decode()  # type: ignore[union-attr]
        with pytest.raises(elector.NoLeaderError):
            c.leader(election)  # it resigned on the way out
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_the_install_line_names_this_package():
    assert block("python-install", "sh").strip() == "pip install ./clients/python"
    assert (PACKAGE / "pyproject.toml").is_file()
