"""Shared test set-up: one on-disk cache per checkout, so spaces build once per CI run; and the CI rule
that a test needing a system package (Chromium, PostgreSQL) may not skip silently.

Mark such a test (or module, through ``pytestmark``) with ``@pytest.mark.system_package("chromium")``.
Where ``CI`` is true (``.ci/run`` sets it) a skip of a marked test is reported as a failure naming the
package, unless ``DPTEXT_SKIP_SYSTEM_TESTS=1`` (an explicit opt-out for machines without root).
"""

import os
import signal
from pathlib import Path

import pytest

os.environ.setdefault("DPTEXT_CACHE_DIR", str(Path(__file__).resolve().parents[1] / ".dptext-cache"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

OPT_OUT = "DPTEXT_SKIP_SYSTEM_TESTS"

# A shell without job control starts background jobs with SIGINT ignored, and an ignored signal stays ignored
# through exec: the Ctrl-C tests' programs would then never see their Ctrl-C. A handled signal is reset to the
# default at exec, so with Python's own handler here every program the tests start gets a working SIGINT.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def strict_system_tests() -> bool:
    """True in CI unless the opt-out is set: skips of ``system_package`` tests then fail."""
    ci = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
    return ci and os.environ.get(OPT_OUT, "").strip() != "1"


def pytest_configure(config):
    config.addinivalue_line("markers", "system_package(name): needs a system package that CI installs; in CI "
                                       f"(CI=true) its skip is a failure unless {OPT_OUT}=1")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    marker = item.get_closest_marker("system_package")
    if marker is None or not rep.skipped or hasattr(rep, "wasxfail") or not strict_system_tests():
        return
    reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
    names = ", ".join(map(str, marker.args)) or "a system package"
    rep.outcome = "failed"
    rep.longrepr = (f"CI must run this test but it was skipped ({reason}); install {names}, or set "
                    f"{OPT_OUT}=1 to allow the skip")
