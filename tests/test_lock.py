"""The hash-pinned lock covers what the package imports and what pyproject.toml asks for.

A dependency added to the code or to pyproject.toml without re-running ``scripts/lock.sh``
fails here with one line naming it.
"""

from __future__ import annotations

import ast
import re
import sys
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "lock.txt"
RELOCK = "add it to pyproject.toml and run scripts/lock.sh"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+?)\s*(\\)?$")


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_pins(text: str) -> dict[str, str]:
    """``{normalised name: version}`` of a ``--generate-hashes`` lock; every pin must carry a hash."""
    pins: dict[str, str] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = PIN.match(line)
        if m:
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if not (m.group(3) and nxt.startswith("--hash=sha256:")):
                pytest.fail(f"requirements/lock.txt: {m.group(1)} is pinned without a hash", pytrace=False)
            pins[norm(m.group(1))] = m.group(2)
        elif line and not line.startswith((" ", "#")):
            pytest.fail(f"requirements/lock.txt: not an exact pin: {line!r}", pytrace=False)
    return pins


def imported_modules(src: Path) -> dict[str, str]:
    """Top-level modules imported under ``src`` (absolute imports), with one importing file each.

    A fallback, i.e. an import inside an ``except`` handler (tried only when something else
    failed), is optional and left out.
    """
    found: dict[str, str] = {}

    class Visitor(ast.NodeVisitor):
        def __init__(self, where: str) -> None:
            self.where = where

        def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
            pass  # fallback imports are optional

        def visit_Import(self, node: ast.Import) -> None:
            for a in node.names:
                found.setdefault(a.name.split(".")[0], self.where)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            if node.level == 0 and node.module:
                found.setdefault(node.module.split(".")[0], self.where)

    for path in sorted(src.rglob("*.py")):
        Visitor(str(path.relative_to(src.parent.parent))).visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return found


def uncovered_imports(modules: dict[str, str], pins: dict[str, str]) -> list[str]:
    """One message per third-party import that no locked distribution provides."""
    providers = metadata.packages_distributions()
    problems = []
    for mod, where in sorted(modules.items()):
        if mod in sys.stdlib_module_names or mod in ("dptext", "__future__"):
            continue
        dists = providers.get(mod)
        if not dists:
            problems.append(f"{mod} (imported in {where}) is installed by no locked package: {RELOCK}")
        elif not any(norm(d) in pins for d in dists):
            problems.append(f"{dists[0]} (imported as {mod} in {where}) is not in requirements/lock.txt: {RELOCK}")
    return problems


def test_every_import_of_the_package_is_locked():
    problems = uncovered_imports(imported_modules(ROOT / "src" / "dptext"), lock_pins(LOCK.read_text()))
    if problems:
        pytest.fail(problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""), pytrace=False)


def test_every_pyproject_requirement_is_locked_in_range():
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        reqs += [r for r in extra if norm(Requirement(r).name) != norm(project["name"])]
    pins = lock_pins(LOCK.read_text())
    for r in map(Requirement, reqs):
        if r.marker is not None and not r.marker.evaluate({"extra": ""}):
            continue
        version = pins.get(norm(r.name))
        assert version is not None, f"{r.name} is not in requirements/lock.txt: run scripts/lock.sh"
        assert r.specifier.contains(version, prereleases=True), \
            f"{r.name}=={version} in requirements/lock.txt is outside pyproject's {r.specifier}: run scripts/lock.sh"


def test_lock_check_names_a_missing_dependency(tmp_path):
    """The check itself: an import that the lock lacks is reported by name, one line."""
    pkg = tmp_path / "src" / "dptext"
    pkg.mkdir(parents=True)
    (pkg / "m.py").write_text("import json\nimport numpy\nfrom yaml import safe_load\nfrom . import x\n"
                              "try:\n    import yaml.cyaml\nexcept ImportError:\n    import fallback_only_xyz\n")
    modules = imported_modules(pkg)
    assert set(modules) == {"json", "numpy", "yaml"}
    pins = lock_pins(LOCK.read_text())
    assert uncovered_imports(modules, pins) == []
    pins.pop("numpy")
    (msg,) = uncovered_imports(modules, pins)
    assert msg.startswith("numpy (imported as numpy in src/dptext/m.py) is not in requirements/lock.txt") and "\n" not in msg
    (pkg / "n.py").write_text("import no_such_module_xyz\n")
    assert any(m.startswith("no_such_module_xyz (imported in src/dptext/n.py) is installed by no locked package")
               for m in uncovered_imports(imported_modules(pkg), pins))
