"""A run that may not write the response cache takes no claims on it (issue 50, item 3): it
could never store the replies it pays, so a run that can write the cache and misses the same
calls would wait on its claims for nothing, then pay anyway. `ResponseCache.lookup` returns
None at once for a read-only cache.

End to end: two demo runs sampling the same new calls on one cache, started together, slow
replies: one as a user the file modes bind (the cache is read-only for it), one that may write
it (root with its capabilities; see tests/e2e/test_cache_cli.py for how root is bound). Neither
waits on the other: the waiting line (`model.cache.claims.WAITING`) is in neither's log.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from healthbench_exp.model.cache.claims import WAITING
from tests import zygote
from tests.cli.test_run_lock import lines, wait_for
from tests.e2e.test_cache_cli import BYPASSING, as_reader
from tests.e2e.test_e2e import run_cli

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root (a writer beside a reader the file modes bind) and setpriv",
)
READ_ONLY = "is read-only ("  # the reader's run says so once, at its start
NEW_CALLS = ["sampling.temperature=0.7", "sampling.num_examples=4"]  # not in the cache yet


def test_a_run_that_cannot_write_the_cache_takes_no_claims(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    args = ["experiment=demo", "wandb.mode=disabled", f"cache.dir={cache}"]
    first = run_cli(*args, f"hydra.run.dir={tmp_path / 'first'}")
    assert first.returncode == 0, first.stderr
    (cache / "responses.sqlite").chmod(0o444)
    cache.chmod(0o555)  # claims.lock stays as the first run made it: the reader could lock it
    try:
        assert as_reader("touch", str(cache / "probe")).returncode != 0  # read-only for it
        slow = [*args, *NEW_CALLS, "offline_server.latency_ms=3000"]
        reader_dir, writer_dir = tmp_path / "reader", tmp_path / "writer"
        reader = zygote.spawn(*slow, f"hydra.run.dir={reader_dir}", drop=BYPASSING)
        wait_for(lambda: any(READ_ONLY in line for line in lines(reader_dir / "healthbench.log")),
                 reader)  # fmt: skip
        writer = zygote.spawn(*slow, f"hydra.run.dir={writer_dir}")
        for process in (reader, writer):
            _out, err = process.communicate(timeout=300)
            assert process.returncode == 0, err
    finally:
        cache.chmod(0o755)
    waiting = WAITING.split("%s")[-1]
    for run_dir in (reader_dir, writer_dir):  # before: the writer waited on the reader's claims
        assert not [line for line in lines(run_dir / "healthbench.log") if waiting in line]
