"""`python -m healthbench_exp`: run one job, or a sweep with `-m` (the Hydra app is `cli.app`)."""

from healthbench_exp.cli.app import main

if __name__ == "__main__":
    main()
