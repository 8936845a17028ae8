"""`python -m healthbench_exp`: run one job, or a sweep with `-m` (the Hydra app is `cli.app`).

Python's cyclic garbage collector is off from here until the engine's `steady_collector` takes
over: start-up (imports, Hydra's config, reading the rows) allocates millions of objects and
frees few of them in cycles, so its collections (full ones included, each scanning everything
loaded so far) find next to nothing, and cost about 0.3 s of CPU per run. `steady_collector`
collects once, freezes what start-up made, and runs the collector while requests fly.

When the job (or sweep) is over, everything left is frozen too: the interpreter's exit then
frees it by reference counting without scanning it for cycles first (its collections cost
another 0.3 s of CPU, in a process whose outputs are all written and closed by then).

Standard output and error that no one reads are guarded first (`core.standard_streams`).
"""

import gc

gc.disable()

from healthbench_exp.core import standard_streams  # noqa: E402

# output no one reads (`| head -3`, a terminal gone, `>&-`) never stops the run: before anything
# opens a file (which could take a closed standard descriptor's number) or writes
standard_streams.guard()

from healthbench_exp.cli.app import main  # noqa: E402  (after the collector is off)

if __name__ == "__main__":
    try:
        main()
    finally:
        gc.freeze()
