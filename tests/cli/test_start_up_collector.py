"""`python -m healthbench_exp` starts up with Python's cyclic garbage collector off (start-up's
collections find next to nothing and cost about 0.3 CPU-s a run); the engine's
`steady_collector` runs it while requests fly and turns it off again after, as it found it; at
the end everything is frozen, so the interpreter's exit does not scan it (another 0.3 CPU-s)."""

from __future__ import annotations

import gc
import subprocess
import sys

from healthbench_exp.engine.loop import steady_collector


def test_the_entry_module_turns_the_collector_off_before_the_imports() -> None:
    probe = (
        "import gc, runpy, sys; "
        "runpy.run_module('healthbench_exp.__main__', run_name='probe'); "  # main() not called
        "print(gc.isenabled(), 'healthbench_exp.cli.app' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.split() == ["False", "True"]


def test_the_entry_module_freezes_what_is_left_when_it_ends() -> None:
    probe = (
        "import gc, runpy, sys; sys.argv = ['healthbench_exp', '--help']\n"
        "try:\n"
        "    runpy.run_module('healthbench_exp', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(gc.get_freeze_count() > 10_000)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.split()[-1] == "True"


def test_the_steady_collector_runs_a_collector_that_start_up_turned_off() -> None:
    gc.disable()
    try:
        with steady_collector():
            assert gc.isenabled()
            cycle: list[object] = []
            cycle.append(cycle)
            del cycle
            assert gc.collect() > 0  # cyclic garbage is still collected
        assert not gc.isenabled()  # as it found it: the finish runs without it too
    finally:
        gc.enable()


def test_the_steady_collector_leaves_an_enabled_collector_enabled() -> None:
    assert gc.isenabled()
    with steady_collector():
        assert gc.isenabled()
    assert gc.isenabled()
