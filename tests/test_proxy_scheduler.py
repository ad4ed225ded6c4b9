"""The perturbation gate: waiters served by priority, FIFO among equals, one wake-up per release."""

import threading
import time

from dptext.server.scheduler import PriorityGate


def wait_until(cond, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def run_waiters(gate, priorities):
    """Hold the only slot, queue one thread per priority (in this order), release; the order they got in."""
    order, started = [], []
    hold = threading.Event()

    def holder():
        with gate(0):
            started.append("holder")
            hold.wait()

    def waiter(i, p):
        with gate(p):
            order.append(i)

    t0 = threading.Thread(target=holder)
    t0.start()
    wait_until(lambda: started)
    threads = []
    for i, p in enumerate(priorities):
        t = threading.Thread(target=waiter, args=(i, p))
        t.start()
        threads.append(t)
        wait_until(lambda: len(gate.waiting) >= i + 1)  # queued in this order
    hold.set()
    for t in [t0, *threads]:
        t.join(timeout=10)
    return order


def test_smallest_priority_first_and_fifo_among_equals():
    gate = PriorityGate(1)
    assert run_waiters(gate, [5, 1, 3, 1, 5]) == [1, 3, 2, 0, 4]
    assert gate.free == 1 and gate.waiting == []


def test_two_slots_never_admit_three():
    gate = PriorityGate(2)
    inside, peak, lock = [0], [0], threading.Lock()

    def work(p):
        with gate(p):
            with lock:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
            time.sleep(0.002)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=work, args=(i % 3,)) for i in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert peak[0] == 2 and gate.free == 2 and gate.waiting == []


def test_a_release_wakes_only_the_next_waiter():
    """While the first waiter holds the slot, the second one's event is still unset: nobody else was woken."""
    gate = PriorityGate(1)
    a_in, a_go, done = threading.Event(), threading.Event(), []

    def a():
        with gate(1):
            a_in.set()
            a_go.wait(10)
        done.append("a")

    def b():
        with gate(2):
            done.append("b")

    with gate(0):
        ta = threading.Thread(target=a)
        ta.start()
        wait_until(lambda: len(gate.waiting) >= 1)
        tb = threading.Thread(target=b)
        tb.start()
        wait_until(lambda: len(gate.waiting) >= 2)
    assert a_in.wait(10)
    assert len(gate.waiting) == 1 and not gate.waiting[0][2].is_set() and done == []
    a_go.set()
    ta.join(timeout=10)
    tb.join(timeout=10)
    assert done == ["a", "b"] and gate.free == 1
