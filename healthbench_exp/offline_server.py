"""`python -m healthbench_exp.offline_server`: serve the built-in OpenAI-compatible endpoint.

An entry point only; the code lives in `healthbench_exp.builtin_endpoint.server`.
"""

from healthbench_exp.builtin_endpoint.server import main

if __name__ == "__main__":
    main()
