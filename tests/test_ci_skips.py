"""The CI rule of conftest.py: a test marked ``system_package`` may not skip in CI (unless opted out).

Runs pytest in a subprocess on a tiny module beside a copy of this suite's conftest.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
MODULE = '''
import pytest

@pytest.mark.system_package("chromium")
def test_needs_chromium():
    pytest.skip("chromium is not installed")

@pytest.mark.system_package("postgresql")
@pytest.mark.skipif(True, reason="no postgres")
def test_needs_postgres():
    pass

def test_unmarked_skip():
    pytest.skip("not a system package")

def test_plain():
    assert True
'''


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("ci-rule")
    shutil.copy(HERE / "conftest.py", root / "conftest.py")
    (root / "test_tiny.py").write_text(MODULE)
    return root


def _pytest(root: Path, **env) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("CI", "DPTEXT_SKIP_SYSTEM_TESTS", "PYTEST_ADDOPTS")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfs", "-p", "no:cacheprovider", str(root)],
                          cwd=root, env={**base, **env}, capture_output=True, text=True, timeout=120)


def test_in_ci_a_skipped_system_test_fails_and_names_the_package(project):
    proc = _pytest(project, CI="true")
    assert proc.returncode == 1, proc.stdout
    # a skip in the call (pytest.skip) reports as failed, one in set-up (skipif) as an error: both fail the run
    assert "1 failed, 1 passed, 1 skipped, 1 error" in proc.stdout
    assert "SKIPPED [1] test_tiny.py:14: not a system package" in proc.stdout  # unmarked skips stay skips
    assert "install chromium" in proc.stdout and "install postgresql" in proc.stdout
    assert "DPTEXT_SKIP_SYSTEM_TESTS=1" in proc.stdout


@pytest.mark.parametrize("env", [{}, {"CI": "true", "DPTEXT_SKIP_SYSTEM_TESTS": "1"}, {"CI": "false"}])
def test_outside_ci_or_with_the_opt_out_the_skips_stay_skips(project, env):
    proc = _pytest(project, **env)
    assert proc.returncode == 0, proc.stdout
    assert "1 passed, 3 skipped" in proc.stdout


def test_ci_script_fails_when_chromium_cannot_be_installed_unless_opted_out():
    """.ci/run's Chromium block, run alone with no chromium, no apt-get and no root: exit 1, or 0 with the opt-out."""
    script = (HERE.parent / ".ci" / "run").read_text()
    start, end = script.index("# >>> chromium"), script.index("# <<< chromium")
    block = "set -euo pipefail\n" + script[start:end]
    env = {"PATH": "/nonexistent", "HOME": os.environ.get("HOME", "/tmp")}
    bash = shutil.which("bash")
    proc = subprocess.run([bash, "-c", block], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "chromium" in proc.stderr and "DPTEXT_SKIP_SYSTEM_TESTS=1" in proc.stderr
    proc = subprocess.run([bash, "-c", block], env={**env, "DPTEXT_SKIP_SYSTEM_TESTS": "1"}, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and "browser tests will skip" in proc.stderr
