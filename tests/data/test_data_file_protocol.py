"""A `dataset.path` run records the file it read by name and sha256, never its local path, and
a local copy of an official file (the same sha256) is no deviation (issue 27 item 6)."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from healthbench_exp.cli.startup import run_protocol
from healthbench_exp.config import protocol
from healthbench_exp.data.healthbench import bundled_sample_path
from healthbench_exp.data.meta_eval import META_SAMPLE_FILE
from tests.config.test_config import composed
from tests.e2e.test_e2e import run_cli


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_path_run_records_the_file_by_name_and_sha256_not_its_path(tmp_path) -> None:
    data = tmp_path / "deep" / "my-copy.jsonl"
    data.parent.mkdir()
    shutil.copy(bundled_sample_path(), data)
    result = run_cli(  # W&B aside: the protocol record is the point
        "experiment=demo",
        "wandb.mode=disabled",
        f"dataset.path={data}",
        f"hydra.run.dir={tmp_path}/r",
    )
    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "r" / "summary.json").read_text())["protocol"]
    digest = sha256(data)
    assert record["data_file"] == {"name": "my-copy.jsonl", "sha256": digest}
    assert record["deviations"] == [
        "judge.name: gpt-4.1-2025-04-14 -> offline-judge",
        "dataset.path: 2025-05-07-06-14-12_oss_eval.jsonl -> "
        f"my-copy.jsonl (sha256 {digest[:12]}...)",
    ]  # no `dataset.source: openai -> bundled`: the file read is the path
    assert str(data) not in json.dumps(record)
    assert f"my-copy.jsonl (sha256 {digest[:12]}...)" in result.stdout  # the start's warning


def test_a_local_copy_of_the_official_file_is_no_deviation(tmp_path, monkeypatch) -> None:
    # the official sha256 table holds the real files' digests; the bundled sample stands in
    data = tmp_path / "local.jsonl"
    shutil.copy(bundled_sample_path(), data)
    official = ("healthbench", "2025-05-07-06-14-12_oss_eval.jsonl", sha256(data))
    monkeypatch.setitem(protocol.OFFICIAL_2025, "all", official)
    check = run_protocol(composed(f"dataset.path={data}"))
    assert (check.deviations, check.reference) == ([], True)
    assert check.data_file == {"name": "local.jsonl", "sha256": sha256(data)}

    data.write_bytes(data.read_bytes() + b"\n")  # one byte more: another file
    check = run_protocol(composed(f"dataset.path={data}"))
    assert [d.split(" -> ")[0] for d in check.deviations] == [
        "dataset.path: 2025-05-07-06-14-12_oss_eval.jsonl"
    ]
    assert check.fixes == ["dataset.path=null"]


@pytest.mark.parametrize("same", [True, False])
def test_the_meta_eval_file_by_sha256(tmp_path, monkeypatch, same: bool) -> None:
    data = tmp_path / "meta.jsonl"
    shutil.copy(bundled_sample_path(META_SAMPLE_FILE), data)
    name, file, digest = protocol.META_EVAL
    monkeypatch.setattr(protocol, "META_EVAL", (name, file, sha256(data) if same else digest))
    check = run_protocol(composed("task=meta_eval", f"dataset.path={data}"))
    assert check.data_file == {"name": "meta.jsonl", "sha256": sha256(data)}
    assert check.deviations == (
        [] if same else [f"dataset.path: {file} -> meta.jsonl (sha256 {sha256(data)[:12]}...)"]
    )
