"""`python -m healthbench_exp.aggregate`: aggregate a sweep or runs into a summary and reports.

An entry point only; the code lives in `healthbench_exp.sweep.aggregate`.
"""

from healthbench_exp.core import standard_streams
from healthbench_exp.sweep.aggregate import main

if __name__ == "__main__":
    standard_streams.guard()  # `| head` never ends it midway (core.standard_streams)
    main()
