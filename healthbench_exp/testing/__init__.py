"""Test-only fakes: the fake clock the pacing tests run on (`fake_clock`). No production
module imports this package (tests/test_architecture.py); the built-in endpoint, which the demo
runs, is `healthbench_exp.builtin_endpoint`."""
