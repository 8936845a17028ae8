"""`python -m healthbench_exp.bridge_kit new_judge=<preset> ...`: grade a stratified sample with
the reference grader and a new judge, kept as a bridge source (docs/bridge.md).

An entry point only; the code lives in `healthbench_exp.cli.bridge_kit`.
"""

import sys

from healthbench_exp.cli.bridge_kit import main

if __name__ == "__main__":
    sys.exit(main())
