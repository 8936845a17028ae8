"""`python -m healthbench_exp.offline_server`: serve the built-in OpenAI-compatible endpoint.

An entry point only; the code lives in `healthbench_exp.testing.server`.
"""

from healthbench_exp.testing.server import main

if __name__ == "__main__":
    main()
