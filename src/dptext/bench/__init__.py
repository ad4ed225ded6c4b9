"""Privacy-utility sweeps: YAML spec -> cells -> tidy Parquet rows -> figures (docs/RESULTS.md).

Names are imported lazily, so importing the package stays light.
"""

import importlib as _importlib

_EXPORTS = {
    "run_cell": "dptext.bench.cell",
    "run_sweep": "dptext.bench.engine", "ENGINES": "dptext.bench.engine", "get_engine": "dptext.bench.engine",
    "register_engine": "dptext.bench.engine",
    "register_measure": "dptext.bench.registry", "CONTEXT_KEYS": "dptext.bench.measures",
    "Sweep": "dptext.bench.spec", "load_sweep": "dptext.bench.spec", "parse_sweep": "dptext.bench.spec",
    "validate_sweep": "dptext.bench.validate",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(_importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'dptext.bench' has no attribute {name!r}")
