"""``limits.perturb_process: true``: perturbation, the memo and the ε ledger in one child process.

Why: one Python process runs its Python code on one core at a time (the
GIL). At 50 clients the proxy spends about 2 ms of CPU per request, half of
it in HTTP (uvicorn, the handler, the upstream hop) and half in perturbing,
charging and committing the memo, so one process tops out near one core's
worth of requests. With this option the HTTP side stays in the server
process and everything that touches private text and privacy state runs in
one child process, so the two halves use two cores.

What does not change: the child runs the same :func:`perturb_and_charge`
as the in-process path, with the same scheduler gate, batching combiner,
single-flight map, memo (staged until charged) and accountant, and it is the
*only* process that opens the state. Single-flight, memo replay and the ε
ledger are therefore exactly what they are in one process (the server
process opens neither the memo nor the ledger). Admission (503 over
``limits.max_queue``) is decided in the server process, before anything is
sent to the child.

Protocol: a duplex pipe carrying pickled tuples. Server -> child:
``(id, request, key, submitted)``; child -> server: ``(id, "ok", messages,
report, charge, timing)`` or ``(id, kind, ...)`` for an error, rebuilt in the
server process as the exception the handler already maps (ApiError as is,
StateError -> 503, DPTextError -> 400, anything else -> 500). Fail closed: if
the child dies, every waiting and later request fails with 503
``state_unavailable`` and nothing goes upstream.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import multiprocessing
import pickle
import threading
import time
from contextlib import contextmanager

from dptext.errors import DPTextError
from dptext.privacy.flight import StateError
from dptext.server.errors import ApiError
from dptext.server.privacy import charge_and_commit

log = logging.getLogger("dptext.server")
START_TIMEOUT_S = 600.0  # building a space for the first time can take minutes


class WorkerError(Exception):
    """An unexpected failure inside the perturbation process (its type name only: messages may quote input)."""


def state_error(exc: BaseException | None) -> StateError | None:
    """The :class:`StateError` in ``exc``'s chain (the core wraps what its memo raises), if any."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, StateError):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def timed_gate(gate, timing: dict):
    """``gate`` (see :mod:`dptext.server.scheduler`), adding the wait to ``timing["queue"]`` and the time
    inside to ``timing["perturb"]``."""

    @contextmanager
    def timed(priority: float):
        t = time.perf_counter()
        with gate(priority):
            t1 = time.perf_counter()
            timing["queue"] += t1 - t
            try:
                yield
            finally:
                timing["perturb"] += time.perf_counter() - t1

    return timed


def perturb_and_charge(perturber, accountant, gate, req, key: str, timing: dict, submitted: float):
    """Perturb, charge the key for the fresh units (429 over budget), then commit the memo: ``(Perturbed,
    Charge)``. ``timing`` gets ``queue`` (waiting for a worker and the perturbation slot) and ``perturb``."""
    timing["queue"] = time.perf_counter() - submitted
    timing["perturb"] = 0.0
    perturbed = perturber.perturb(timed_gate(gate, timing), req, key)
    return perturbed, charge_and_commit(accountant, perturbed, key)


# ----- the child process ------------------------------------------------------------------------------------
def _error_reply(rid: int, exc: BaseException) -> tuple:

    if isinstance(exc, ApiError):
        return (rid, "api", exc.status, exc.message, exc.type, exc.code, exc.param, exc.headers)
    state = state_error(exc)
    if state is not None:
        return (rid, "state", str(state))
    if isinstance(exc, DPTextError):
        return (rid, "dptext", str(exc))
    return (rid, "error", type(exc).__name__)


def child_main(conn, cfg) -> None:
    """The perturbation process: build the core and the state, then serve requests until the pipe closes."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the server shuts us down
    from dptext.server.privacy import Perturber
    from dptext.server.scheduler import BATCH, Scheduler
    from dptext.server.state import open_state

    try:
        memo, accountant = open_state(cfg, None, build_memo=True)
        perturber = Perturber(cfg, memo=memo)
        scheduler = Scheduler(cfg.limits.perturb_concurrency, cfg.limits.max_queue)
        scheduler.attach(perturber)
    except Exception as exc:  # noqa: BLE001 - a start-up problem is one line in the server process
        conn.send_bytes(pickle.dumps(("fail", str(exc) if isinstance(exc, DPTextError) else type(exc).__name__)))
        return
    send_lock = threading.Lock()

    def send(msg: tuple) -> None:
        data = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
        with send_lock:
            conn.send_bytes(data)

    def reply(rid: int, *got) -> None:
        """``reply(rid, exc)`` or ``reply(rid, perturbed, charge, timing)``."""
        if len(got) == 1:
            msg = _error_reply(rid, got[0])
        else:
            msg = (rid, "ok", got[0].messages, got[0].report, got[1], got[2])
        try:
            send(msg)
        except OSError:  # the server process is gone
            pass

    def work(rid: int, req, key: str, submitted: float) -> None:
        timing: dict = {}
        try:
            perturbed, charge = perturb_and_charge(perturber, accountant, scheduler.gate, req, key, timing,
                                                   submitted)
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to its own request
            reply(rid, exc)
            return
        reply(rid, perturbed, charge, timing)

    driver = None
    if scheduler.combiner is not None and perturber.seed is None:  # batchable mechanism, OS entropy
        from dptext.server.driver import BatchDriver

        driver = BatchDriver(perturber, accountant, reply, lambda msg: scheduler.pool.submit(work, *msg))

    send(("ready",))
    try:
        while True:
            msg = pickle.loads(conn.recv_bytes())
            if msg is None:  # the server is shutting down
                break
            if driver is None:
                scheduler.pool.submit(work, *msg)
                continue
            batch, more = [msg], msg  # every request already waiting in the pipe: one batch
            while len(batch) < BATCH and conn.poll(0):
                more = pickle.loads(conn.recv_bytes())
                if more is None:
                    break
                batch.append(more)
            driver.run(batch)
            if more is None:
                break
    except (EOFError, OSError):  # the server process is gone
        pass
    finally:
        scheduler.pool.shutdown(wait=True)  # requests already taken finish (and are charged) first
        if memo is not None:
            memo.close()
        accountant.close()


# ----- the server side --------------------------------------------------------------------------------------
class PerturbProcess:
    """The server process's handle on the child: ``await call(req, key, timing, submitted)``."""

    def __init__(self, cfg) -> None:
        ctx = multiprocessing.get_context("spawn")  # no fork: the server may already hold threads and sockets
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=child_main, args=(child, cfg), name="dptext-perturb", daemon=True)
        self.proc.start()
        child.close()
        if not self.conn.poll(START_TIMEOUT_S):
            self.proc.kill()
            raise DPTextError("the perturbation process did not start within "
                              f"{START_TIMEOUT_S:g} s")
        try:
            first = pickle.loads(self.conn.recv_bytes())
        except (EOFError, OSError):
            first = ("fail", "it exited during start-up")
        if first[0] != "ready":
            self.proc.join(5)
            self.conn.close()
            raise DPTextError(f"the perturbation process could not start: {first[1]}")
        self.ids = itertools.count()
        self.pending: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future]] = {}
        self.dead = False
        self.lock = threading.Lock()  # guards `pending` and `dead` (event loop thread and reader thread)
        self.send_lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, name="dptext-perturb-reader", daemon=True)
        self.reader.start()

    async def call(self, req, key: str, timing: dict, submitted: float):
        """``(Perturbed-like, Charge)`` from the child, or the child's error raised here."""
        from dptext.server.privacy import Perturbed

        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        rid = next(self.ids)
        with self.lock:
            if self.dead:
                raise StateError("the perturbation process has exited")
            self.pending[rid] = (loop, fut)
        try:
            data = pickle.dumps((rid, req, key, submitted), protocol=pickle.HIGHEST_PROTOCOL)
            try:
                with self.send_lock:
                    self.conn.send_bytes(data)
            except (OSError, ValueError):
                raise StateError("the perturbation process has exited") from None
            msg = await fut
        finally:
            with self.lock:
                self.pending.pop(rid, None)
        kind = msg[1]
        if kind == "ok":
            _, _, messages, report, charge, child_timing = msg
            timing.update(child_timing)
            return Perturbed(messages, report), charge
        raise _rebuild(msg)

    def _read(self) -> None:
        """Reader thread: hand each reply to its request's future (on that request's event loop)."""
        try:
            while True:
                msgs = [pickle.loads(self.conn.recv_bytes())]
                while len(msgs) < 256 and self.conn.poll(0):  # replies that are already here: one wake-up
                    msgs.append(pickle.loads(self.conn.recv_bytes()))
                by_loop: dict = {}
                with self.lock:
                    for msg in msgs:
                        entry = self.pending.get(msg[0])
                        if entry is not None:
                            by_loop.setdefault(entry[0], []).append((entry[1], msg))
                for loop, replies in by_loop.items():
                    loop.call_soon_threadsafe(_deliver_all, replies)
        except (EOFError, OSError):
            pass
        with self.lock:  # fail closed: every waiting request gets 503, every later one too
            self.dead = True
            waiting = list(self.pending.values())
        if waiting or self.proc.exitcode not in (None, 0):
            log.error("the perturbation process exited (code %s); requests fail closed", self.proc.exitcode)
        for loop, fut in waiting:
            loop.call_soon_threadsafe(_deliver, fut, (None, "state", "the perturbation process has exited"))

    def close(self) -> None:
        """Ask the child to stop (it finishes what it has taken and closes its memo and ledger), then close
        the pipe. (Closing the pipe alone would not wake the reader thread blocked on it.)"""
        try:
            with self.send_lock:
                self.conn.send_bytes(pickle.dumps(None))
        except (OSError, ValueError):
            pass
        self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)
        self.reader.join(5)  # it sees EOF once the child has exited
        self.conn.close()


def _deliver(fut: asyncio.Future, msg: tuple) -> None:
    if not fut.done():  # the request may have been cancelled meanwhile
        fut.set_result(msg)


def _deliver_all(replies: list[tuple[asyncio.Future, tuple]]) -> None:
    for fut, msg in replies:
        _deliver(fut, msg)


def _rebuild(msg: tuple) -> Exception:
    kind = msg[1]
    if kind == "api":
        _, _, status, message, type_, code, param, headers = msg
        return ApiError(status, message, type=type_, code=code, param=param, headers=headers)
    if kind == "state":
        return StateError(msg[2])
    if kind == "dptext":
        return DPTextError(msg[2])
    return WorkerError(msg[2])
