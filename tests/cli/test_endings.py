"""How a job ends is decided by the class of what ended it, never by the order of `ENDINGS`.

Every kind of exception that ends a job gets the same status and exit code from the table in
its own order, reversed, and shuffled; and each is the one its class says.
"""

from __future__ import annotations

import errno
import random
import signal
from pathlib import Path

import pytest

from healthbench_exp.cli.endings import ENDINGS, Ending, JobDir, ending_in, ending_of
from healthbench_exp.config.schema import ConfigError
from healthbench_exp.core.endpoint_errors import FatalEndpointError
from healthbench_exp.core.run_end import Exit, RunEnded, Status
from healthbench_exp.data.rows import DataError
from healthbench_exp.engine.stops import (
    FailureShareExceeded,
    JudgeGaveNothing,
    ModelGaveNothing,
    RunInterrupted,
    raise_if_given_up,
)
from healthbench_exp.grading.verdict_watch import UnparseableJudge
from healthbench_exp.model.clock import SYSTEM_CLOCK
from healthbench_exp.model.endpoint import QuotaExhausted
from healthbench_exp.model.health import SERVER_ERRORS, EndpointHealth

# what ended the job, and the status and exit code it must end with
EXPECTED: list[tuple[BaseException, Status, int]] = [
    (FailureShareExceeded("over", Status.FAILED, Exit.FAILED), Status.FAILED, Exit.FAILED),
    (FailureShareExceeded("over", Status.UNGRADED, Exit.UNGRADED), Status.UNGRADED, 5),
    (JudgeGaveNothing("the judge answered nothing usable"), Status.UNGRADED, Exit.UNGRADED),
    (ModelGaveNothing("the model answered nothing usable"), Status.FAILED, Exit.REFUSED),
    (UnparseableJudge("no readable verdict"), Status.UNGRADED, Exit.UNGRADED),
    (QuotaExhausted("insufficient_quota"), Status.FAILED, Exit.REFUSED),
    (FatalEndpointError("401"), Status.FAILED, Exit.REFUSED),
    (ConfigError("bad key"), Status.FAILED, Exit.REFUSED),
    (DataError("bad row"), Status.FAILED, Exit.REFUSED),
    (RunInterrupted(signal.SIGTERM), Status.INTERRUPTED, 128 + signal.SIGTERM),
    (RunInterrupted(signal.SIGINT), Status.INTERRUPTED, 130),
    (OSError(errno.ENOSPC, "No space left on device", "x"), Status.FAILED, Exit.ERROR),
]


def ending_by(table: list, exc: BaseException, job: JobDir) -> Ending:
    ending = ending_in(table, type(exc))
    assert ending is not None, exc
    return ending(exc, job)


@pytest.mark.parametrize(("exc", "status", "exit_code"), EXPECTED, ids=lambda v: repr(v)[:40])
def test_every_order_of_the_table_gives_the_same_ending(
    exc: BaseException, status: Status, exit_code: int, tmp_path: Path
) -> None:
    job = JobDir(tmp_path, fresh=False)
    orders = [list(ENDINGS), list(reversed(ENDINGS))]
    rng = random.Random(55)
    for _ in range(20):
        orders.append(rng.sample(list(ENDINGS), len(ENDINGS)))
    endings = {(e.status, e.exit_code) for e in (ending_by(t, exc, job) for t in orders)}
    assert endings == {(status, exit_code)}, endings
    assert ending_of(exc, job).status == status  # the app's own lookup agrees


def test_a_status_is_its_string_on_disk() -> None:
    """Records written before the enum read the same: a member equals its string."""
    assert Status.COMPLETED == "completed" and Status("interrupted") is Status.INTERRUPTED
    assert f"{Status.DRY_RUN}" == "dry_run"


def test_what_is_no_ending_of_the_job_goes_on(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        ending_of(SystemExit(0), JobDir(tmp_path, fresh=False))


@pytest.mark.parametrize(
    ("role", "status", "exit_code"), [("model", "failed", 2), ("judge", "ungraded", 5)]
)
def test_a_dead_endpoint_ends_the_run_resumable(
    role: str, status: str, exit_code: int, tmp_path: Path
) -> None:
    """A run an endpoint given up on ended: its own status and exit code, and the line ends
    with the command that finishes the run."""
    health = EndpointHealth(role, "http://127.0.0.1:9/v1", 3, 0.0, clock=SYSTEM_CLOCK.now)
    for _ in range(3):
        health.attempt_failed(SERVER_ERRORS, "HTTP 500")
    assert health.dead
    with pytest.raises(RunEnded) as stopped:
        raise_if_given_up({role: health}, tmp_path)
    ending = ending_of(stopped.value, JobDir(tmp_path, fresh=True))
    assert (ending.status, ending.exit_code) == (status, exit_code)
    assert ending.message is not None
    assert f"the {role} endpoint http://127.0.0.1:9/v1 answered nothing usable" in ending.message
    assert ending.message.endswith(f"finish with: python -m healthbench_exp resume={tmp_path}")
