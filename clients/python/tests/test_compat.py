"""The package reads as Python 3.9 and needs nothing outside the standard library."""

from __future__ import annotations

import ast
import sys

import pytest

from conftest import PACKAGE

SOURCES = sorted((PACKAGE / "elector").glob("*.py")) + [PACKAGE / "conformance_driver.py"]
STDLIB = set(getattr(sys, "stdlib_module_names", ())) | {"elector"}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_sources_parse_as_python_3_9(path):
    text = path.read_text()
    tree = ast.parse(text, filename=str(path), feature_version=(3, 9))
    assert "from __future__ import annotations" in text, "annotations must not be evaluated on 3.9"
    if sys.version_info >= (3, 10):
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and getattr(node, "level", 0) == 0:
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                for n in names:
                    assert n.split(".")[0] in STDLIB, "%s imports %s, not in the standard library" % (path.name, n)
