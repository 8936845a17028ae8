"""`python -m healthbench_exp.report`: build a W&B report comparing the runs of a sweep.

An entry point only; the code lives in `healthbench_exp.output.wandb.sweep_report`.
"""

from healthbench_exp.output.wandb.sweep_report import main

if __name__ == "__main__":
    main()
