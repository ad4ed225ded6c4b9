"""Prometheus text exposition, written by hand (no extra dependency).

Counters and histograms with fixed label sets; ``render()`` produces the
text format 0.0.4 served at ``GET /metrics``. Labels carry key ids, modes,
statuses and outcomes only, never request content.
"""

from __future__ import annotations

import threading
from collections import defaultdict, deque

import numpy as np

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

DEFS = {
    "dptext_requests_total": ("counter", "Chat completion requests by status."),
    "dptext_upstream_requests_total": ("counter", "Calls to the upstream LLM by outcome."),
    "dptext_units_total": ("counter", "Private units by mechanism action."),
    "dptext_request_bytes_total": ("counter", "Request body bytes received."),
    "dptext_in_flight_requests": ("gauge", "Chat completion requests being served."),
    "dptext_request_duration_seconds": ("histogram", "Total time to answer (streams: to the last byte)."),
    "dptext_perturb_duration_seconds": ("histogram", "Time spent perturbing one request."),
    "dptext_upstream_duration_seconds": ("histogram", "Time waiting for the upstream answer."),
}


def _labels(labels: dict) -> tuple:
    return tuple(sorted(labels.items()))


def _escape(v) -> str:
    return str(v).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _fmt(labels: tuple, extra: tuple = ()) -> str:
    items = list(labels) + list(extra)
    if not items:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in items) + "}"


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


KEY_WINDOW = 1000  # latest request latencies kept per key (dashboard percentiles)


class Metrics:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.values: dict[str, dict[tuple, float]] = defaultdict(dict)
        self.hists: dict[str, dict[tuple, list]] = defaultdict(dict)
        self.keys: dict[str, list] = {}  # key id -> [requests, errors, deque of seconds]

    def record_key(self, key: str, ok: bool, seconds: float) -> None:
        with self.lock:
            row = self.keys.setdefault(key, [0, 0, deque(maxlen=KEY_WINDOW)])
            row[0] += 1
            row[1] += not ok
            row[2].append(seconds)

    def per_key(self) -> dict[str, dict]:
        """Per key id: requests, errors, and p50 / p95 latency in ms over the latest requests."""
        with self.lock:
            rows = {k: (n, e, np.array(lat)) for k, (n, e, lat) in self.keys.items()}
        out = {}
        for k, (n, e, lat) in rows.items():
            p50, p95 = (np.percentile(lat, [50, 95]) * 1000).tolist() if len(lat) else (None, None)
            out[k] = {"requests": n, "errors": e, "latency_ms": {"p50": p50, "p95": p95}}
        return out

    def inc(self, name: str, value: float = 1.0, **labels) -> None:
        key = _labels(labels)
        with self.lock:
            d = self.values[name]
            d[key] = d.get(key, 0.0) + value

    def add(self, name: str, value: float, **labels) -> None:  # gauges go up and down
        self.inc(name, value, **labels)

    def observe(self, name: str, seconds: float, **labels) -> None:
        key = _labels(labels)
        with self.lock:
            h = self.hists[name].get(key)
            if h is None:
                h = self.hists[name][key] = [[0] * len(LATENCY_BUCKETS), 0.0, 0]
            for i, b in enumerate(LATENCY_BUCKETS):
                if seconds <= b:
                    h[0][i] += 1
            h[1] += seconds
            h[2] += 1

    def render(self) -> str:
        lines = []
        with self.lock:
            for name, (kind, help_) in DEFS.items():
                lines.append(f"# HELP {name} {help_}")
                lines.append(f"# TYPE {name} {kind}")
                if kind == "histogram":
                    for key, (counts, total, n) in sorted(self.hists.get(name, {}).items()):
                        for b, c in zip(LATENCY_BUCKETS, counts):
                            lines.append(f"{name}_bucket{_fmt(key, (('le', repr(float(b))),))} {c}")
                        lines.append(f"{name}_bucket{_fmt(key, (('le', '+Inf'),))} {n}")
                        lines.append(f"{name}_sum{_fmt(key)} {total:.6f}")
                        lines.append(f"{name}_count{_fmt(key)} {n}")
                else:
                    for key, v in sorted(self.values.get(name, {}).items()):
                        lines.append(f"{name}{_fmt(key)} {_num(v)}")
        return "\n".join(lines) + "\n"
