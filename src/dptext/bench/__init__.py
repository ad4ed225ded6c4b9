"""Privacy-utility sweeps: YAML spec -> cells -> tidy Parquet rows -> figures (SPEC 4, issue 6)."""

from dptext.bench.cell import run_cell
from dptext.bench.engine import ENGINES, get_engine, register_engine, run_sweep
from dptext.bench.measures import CONTEXT_KEYS, register_measure
from dptext.bench.spec import Sweep, load_sweep, parse_sweep

__all__ = ["run_cell", "run_sweep", "ENGINES", "get_engine", "register_engine", "register_measure",
           "CONTEXT_KEYS", "Sweep", "load_sweep", "parse_sweep"]
