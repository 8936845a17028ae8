"""Claims on the response cache's keys (`model.cache.claims`), on real files, between real
processes: a key claimed by one process is not claimed by another until the holder releases it
or dies; a waiter gets the holder's stored reply; claims exclude each other under contention;
a holder's release waits for its reply's commit.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from healthbench_exp.model.cache import CachedReply, ResponseCache
from healthbench_exp.model.cache.claims import CLAIMS_FILE, Claim, KeyClaims, key_offset

KEY = "ab" * 32

# A process that claims KEY in the cache directory argv[1], says `held`, then on each line of
# stdin: `answer` writes argv[1]/answer; `release` releases the claim; anything else exits.
HOLDER = """
import sys
from pathlib import Path
from healthbench_exp.model.cache.claims import KeyClaims
directory = Path(sys.argv[1])
claims = KeyClaims(directory)
assert claims.ready()
claim = claims.try_claim(sys.argv[2])
print("held" if claim is not None else "refused", flush=True)
for line in sys.stdin:
    if line.strip() == "answer":
        (directory / "answer").write_text("the holder's reply")
    elif line.strip() == "release":
        claim.release()
        print("released", flush=True)
    else:
        break
"""

# A process that claims and releases KEY `argv[2]` times; while it holds the claim it creates
# argv[1]/inside exclusively (failing, exit 3, if another holder has it) and removes it.
CONTENDER = """
import os, sys
from pathlib import Path
from healthbench_exp.model.cache.claims import KeyClaims
directory = Path(sys.argv[1])
claims = KeyClaims(directory)
assert claims.ready()
held = 0
while held < int(sys.argv[2]):
    claim = claims.try_claim(sys.argv[3])
    if claim is None:
        continue
    try:
        os.close(os.open(directory / "inside", os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        sys.exit(3)
    os.unlink(directory / "inside")
    claim.release()
    held += 1
"""


def python(script: str, *args: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    return subprocess.Popen(
        [sys.executable, "-c", script, *args], env=env, text=True, **kwargs
    )  # fmt: skip


@pytest.fixture
def holder(tmp_path: Path):
    """A process holding KEY's claim in `tmp_path` (its stdin takes HOLDER's commands)."""
    process = python(
        HOLDER, str(tmp_path), KEY, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )  # fmt: skip
    assert process.stdout.readline().strip() == "held"
    yield process
    if process.poll() is None:
        process.kill()
    process.wait()


def tell(process: subprocess.Popen, command: str) -> None:
    process.stdin.write(command + "\n")
    process.stdin.flush()


def test_a_key_another_process_holds_is_claimed_once_it_is_killed(holder, tmp_path) -> None:
    claims = KeyClaims(tmp_path)
    assert claims.ready()
    assert claims.try_claim(KEY) is None
    assert claims.try_claim("cd" * 32) is not None  # other keys are free
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    claim = claims.try_claim(KEY)  # the kernel released a dead holder's lock
    assert isinstance(claim, Claim)
    claim.release()


def test_a_waiter_gets_the_reply_the_holder_stored(holder, tmp_path) -> None:
    def answered() -> str | None:
        path = tmp_path / "answer"
        return path.read_text() if path.exists() else None

    async def wait_then_answer() -> str | Claim | None:
        waiting = asyncio.create_task(KeyClaims(tmp_path).claim(KEY, answered))
        await asyncio.sleep(0.2)  # the waiter polls meanwhile: it must not claim a held key
        assert not waiting.done()
        tell(holder, "answer")
        tell(holder, "release")
        return await waiting

    assert asyncio.run(wait_then_answer()) == "the holder's reply"


def test_a_waiter_claims_the_key_itself_when_the_holder_dies_without_a_reply(
    holder, tmp_path
) -> None:
    async def wait_through_a_kill() -> str | Claim | None:
        waiting = asyncio.create_task(KeyClaims(tmp_path).claim(KEY, lambda: None))
        await asyncio.sleep(0.1)
        assert not waiting.done()
        holder.send_signal(signal.SIGKILL)
        return await asyncio.wait_for(waiting, 30)

    assert isinstance(asyncio.run(wait_through_a_kill()), Claim)


def test_claims_exclude_each_other_under_contention(tmp_path) -> None:
    """Four processes claim one key 300 times each: never two at once."""
    contenders = [python(CONTENDER, str(tmp_path), "300", KEY) for _ in range(4)]
    assert [process.wait(timeout=120) for process in contenders] == [0, 0, 0, 0]


@pytest.mark.parametrize("shared", [True, False], ids=["shared cache", "a run's own journal"])
def test_within_a_process_a_second_call_of_a_key_waits_and_replays_the_first(
    tmp_path, shared: bool
) -> None:
    cache = ResponseCache(tmp_path, shared=shared)
    reply = CachedReply("the reply", 10, 5)

    async def two_calls() -> tuple[object, object]:
        first = await cache.lookup(KEY, None)
        assert isinstance(first, Claim)
        second = asyncio.create_task(cache.lookup(KEY, None))
        await asyncio.sleep(0)
        assert not second.done()
        cache.put(KEY, reply)
        cache.release(first)
        return first, await second

    _first, second = asyncio.run(two_calls())
    assert second == reply
    assert cache.lookups[None] == [1, 1]  # the second call counted a hit, not a miss
    # a cache no other process opens (cache.enabled=false: the run's journal) makes no claims file
    assert (tmp_path / CLAIMS_FILE).exists() == shared
    cache.close()


def test_a_claim_is_released_only_once_its_reply_is_committed(tmp_path) -> None:
    cache = ResponseCache(tmp_path)
    other = sqlite3.connect(tmp_path / "responses.sqlite")  # as another process reads it

    def stored() -> bool:
        return other.execute("SELECT 1 FROM responses WHERE key = ?", (KEY,)).fetchone() is not None

    async def pay_and_release() -> None:
        claim = await cache.lookup(KEY)
        assert isinstance(claim, Claim)
        cache.put(KEY, CachedReply("paid", 1, 1))  # committed at the end of the loop's pass
        cache.release(claim)
        assert not claim.released.is_set() and not stored()
        await claim.released.wait()
        assert stored()

    asyncio.run(pay_and_release())
    cache.close()
    other.close()


def test_keys_stand_for_distinct_bytes_of_the_claims_file() -> None:
    offsets = {key_offset(f"{i:064x}") for i in range(10_000)}
    assert len(offsets) == 10_000 and max(offsets) < 2**56
