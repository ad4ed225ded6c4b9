"""The accountant's running window sum against the exact sum of the charges inside the window."""

import math

import numpy as np

from dptext.privacy import accounting
from dptext.privacy.accounting import Accountant


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_window_sum_matches_the_exact_sum_while_charges_age_out(monkeypatch):
    monkeypatch.setattr(accounting, "RESUM_EVERY", 50)  # exercise the periodic exact re-sum too
    clock, rng = Clock(), np.random.default_rng(3)
    acc = Accountant(None, window_s=10.0, clock=clock)
    charged = []  # (time, eps) of every charge
    for _ in range(400):
        clock.t += float(rng.uniform(0, 0.2))
        eps = float(rng.choice([0.0, 0.1, 0.7, 3.0]))
        c = acc.charge("k", eps)
        exact = math.fsum(e for t, e in charged + [(clock.t, eps)] if t > clock.t - 10.0 and e > 0)
        assert abs(c.window - exact) < 1e-9, (c.window, exact)
        charged.append((clock.t, eps))
    assert abs(c.total - math.fsum(e for _, e in charged)) < 1e-9
    clock.t += 11.0  # everything aged out
    assert acc.charge("k", 0.0).window == 0.0 and acc.snapshot()["k"]["epsilon_window"] == 0.0


def test_budget_still_refuses_within_the_window_and_admits_after_it(tmp_path):
    clock = Clock()
    acc = Accountant(tmp_path / "a.sqlite", window_s=60.0, budgets={"k": 7.0}, clock=clock)
    for _ in range(2):
        acc.charge("k", 3.0)
        clock.t += 1.0
    try:
        acc.charge("k", 3.0)
        raise AssertionError("over budget was admitted")
    except accounting.BudgetExceeded as exc:
        assert exc.spent == 6.0 and math.isclose(exc.retry_after, 58.0)
    clock.t += 58.5  # the first charge ages out, the second not
    assert acc.charge("k", 3.0).window == 6.0
    acc.close()
    again = Accountant(tmp_path / "a.sqlite", window_s=60.0, budgets={"k": 7.0}, clock=clock)
    assert again.snapshot()["k"]["epsilon_window"] == 6.0 and again.total("k") == 9.0
