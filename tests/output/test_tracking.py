"""W&B: real offline runs, read back from the `.wandb` log they write."""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import healthbench_exp
from healthbench_exp.builtin_endpoint.server import server_args
from healthbench_exp.config.schema import WandbMode
from healthbench_exp.output.wandb import content as wandb_content
from healthbench_exp.output.wandb import tracker as tracking
from tests.e2e.test_e2e import run_cli
from tests.wandb_log import read_run
from tests.zygote import ForkedServer

SECRET = "sk-test-wandb-7d1e-do-not-store"


def wandb_env(tmp_path: Path) -> dict[str, str]:
    return {
        "WANDB_DIR": str(tmp_path / "wandb_dir"),
        "WANDB_DATA_DIR": str(tmp_path / "wandb_data"),  # artifact staging
        "WANDB_CACHE_DIR": str(tmp_path / "wandb_cache"),
    }


def offline_runs(wandb_dir: Path) -> list[Path]:
    return sorted((wandb_dir / "wandb").glob("offline-run-*"))


def table_rows(artifact, name: str) -> int:
    (entry,) = [c for c in artifact.manifest.contents if c.path == f"{name}.table.json"]
    return len(json.loads(Path(entry.local_path).read_text())["data"])


def test_offline_run_holds_config_summary_tables_and_artifact(tmp_path) -> None:
    out = tmp_path / "run"
    with ForkedServer([]) as server:
        result = run_cli(
            "experiment=demo", "model=openai_compatible", "model.name=m",
            f"model.base_url={server.base_url}", "model.api_key_env=HB_WANDB_SECRET",
            f"hydra.run.dir={out}",
            env={**wandb_env(tmp_path), "HB_WANDB_SECRET": SECRET},
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = json.loads((out / "summary.json").read_text())
    (run_dir,) = offline_runs(tmp_path / "wandb_dir")
    run = read_run(run_dir)

    assert run.job_type == "eval" and run.exit_code == 0
    assert summary["wandb"]["run_id"] == run.run_id
    # config: the resolved Hydra config plus overrides, version and commit; no key anywhere
    for key in ("model", "judge", "dataset", "sampling", "runner"):
        assert run.config[key] == summary["config"][key]
    assert run.config["model"]["api_key_env"] == "HB_WANDB_SECRET"
    assert "experiment=demo" in run.config["hydra_overrides"]
    assert run.config["harness_version"] == healthbench_exp.__version__
    for path in (tmp_path / "wandb_dir").rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    # summary: every metric under its reference name, and the counts
    for name, value in summary["metrics"].items():
        assert run.summary[name] == pytest.approx(value, abs=1e-12), name
    assert run.summary["counts/ungraded_criteria"] == summary["counts"]["ungraded_criteria"]
    assert run.summary["counts/judge_requests"] == summary["counts"]["judge_requests"]
    for table in ("by_theme", "by_axis", "by_consensus_criterion", "per_example"):
        assert run.summary[f"{table}/_type"] == "table-file", table
    for chart in ("by_theme", "by_axis", "by_consensus_criterion"):  # wandb.plot.bar's tables
        assert run.summary[f"{chart}_chart_table/_type"] == "table-file", chart
    assert run.summary["by_theme/nrows"] == 7 and run.summary["by_axis/nrows"] == 5
    assert run.summary["by_consensus_criterion/nrows"] == len(summary["consensus"]) > 0
    # live progress reached the end
    progress = [h for h in run.history if "progress/examples_done" in h]
    assert progress[-1]["progress/examples_done"] == 24
    assert progress[-1]["progress/requests"] == 24 + summary["counts"]["judge_replies"]
    # the results artifact: files, the HF dataset and the per-criterion table
    (artifact,) = [a for a in run.artifacts if a.type == wandb_content.ARTIFACT_TYPE]
    assert artifact.name == f"results-{run.run_id}"
    paths = {c.path for c in artifact.manifest.contents}
    assert {"summary.json", "per_criterion.jsonl", "examples.jsonl"} <= paths
    assert {"results/dataset_info.json", "results/state.json"} <= paths
    criteria = len((out / "per_criterion.jsonl").read_text().splitlines())
    assert table_rows(artifact, "per_criterion") == criteria == summary["counts"]["criteria"]
    assert table_rows(artifact, "per_example") == 24


def test_disabled_leaves_no_wandb_files(tmp_path) -> None:
    out = tmp_path / "run"
    result = run_cli(
        "experiment=demo", "wandb=disabled", f"hydra.run.dir={out}", env=wandb_env(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    assert json.loads((out / "summary.json").read_text())["wandb"] is None
    assert not (out / "wandb").exists()
    assert not (tmp_path / "wandb_dir").exists()


def test_a_job_failing_before_any_result_opens_no_run(tmp_path) -> None:
    with ForkedServer(server_args(require_key="the-right-key")) as server:
        result = run_cli(
            "experiment=demo", "model=openai_compatible", "model.name=m",
            f"model.base_url={server.base_url}", "model.api_key_env=HB_WRONG_KEY",
            f"hydra.run.dir={tmp_path / 'run'}",
            env={**wandb_env(tmp_path), "HB_WRONG_KEY": "a-wrong-key"},
        )  # fmt: skip
    assert result.returncode == 2
    assert "model endpoint refused the API key (401); check HB_WRONG_KEY" in result.stderr
    assert json.loads((tmp_path / "run" / "status.json").read_text())["status"] == "failed"
    assert not (tmp_path / "wandb_dir").exists()  # the run opens with the first result


def test_a_sweep_is_one_group_of_runs(tmp_path) -> None:
    sweep = tmp_path / "sweep"
    result = run_cli(
        "-m", "experiment=demo", "model.name=offline-a,offline-b", "sampling.num_examples=5",
        f"hydra.sweep.dir={sweep}", env=wandb_env(tmp_path),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    runs = {}
    for job in (0, 1):
        summary = json.loads((sweep / str(job) / "summary.json").read_text())
        runs[summary["wandb"]["run_id"]] = summary
    groups = set()
    for run_dir in offline_runs(tmp_path / "wandb_dir"):
        run = read_run(run_dir)
        summary = runs.pop(run.run_id)
        groups.add(run.group)
        for name, value in summary["metrics"].items():
            assert run.summary[name] == pytest.approx(value, abs=1e-12), name
        (artifact,) = [a for a in run.artifacts if a.type == wandb_content.ARTIFACT_TYPE]
        assert table_rows(artifact, "per_criterion") == summary["counts"]["criteria"]
    assert not runs
    # one readable group: the job name and the sweep's start, never a machine path
    (group,) = groups
    assert group == tracking.sweep_group(str(sweep), "healthbench")
    assert re.fullmatch(r"healthbench \d{4}-\d\d-\d\d \d\d:\d\d:\d\d sweep", group), group
    assert str(tmp_path) not in group
    summary = json.loads((sweep / "0" / "summary.json").read_text())
    assert summary["wandb"]["group"] == group


def test_auto_mode_goes_online_only_with_credentials(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("NETRC", "WANDB_API_KEY", "WANDB_MODE", "WANDB_DISABLED", "WANDB_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    assert tracking.resolve_mode(WandbMode.auto) == "offline"
    (tmp_path / ".netrc").write_text("machine api.wandb.ai\n  login user\n  password abc\n")
    (tmp_path / ".netrc").chmod(0o600)
    assert tracking.resolve_mode(WandbMode.auto) == "online"
    (tmp_path / ".netrc").unlink()
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    assert tracking.resolve_mode(WandbMode.auto) == "online"
    assert tracking.resolve_mode(WandbMode.disabled) == "disabled"


def test_large_criterion_tables_are_split(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(wandb_content, "ARTIFACT_TABLE_MAX_ROWS", 4)
    row = {c: None for c in wandb_content.PER_CRITERION_COLUMNS} | {"tags": ["axis:accuracy"]}
    path = tmp_path / "per_criterion.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for _ in range(10)))
    parts = list(wandb_content.criterion_rows(path))
    assert [len(part) for part in parts] == [4, 4, 2]
    assert parts[0][0][wandb_content.PER_CRITERION_COLUMNS.index("tags")] == "axis:accuracy"


def test_meta_eval_run_holds_its_metrics_tables_and_rows(tmp_path) -> None:
    out = tmp_path / "run"
    result = run_cli(
        "experiment=demo", "task=meta_eval", f"hydra.run.dir={out}", env=wandb_env(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads((out / "summary.json").read_text())
    (run_dir,) = offline_runs(tmp_path / "wandb_dir")
    run = read_run(run_dir)
    assert run.job_type == "meta_eval" and run.exit_code == 0
    assert run.config["task"]["kind"] == "meta_eval"
    for name, value in summary["metrics"].items():
        if value is None:  # undefined metrics are not logged as numbers
            assert name not in run.summary, name
        else:
            assert run.summary[name] == pytest.approx(value, abs=1e-12), name
    assert run.summary["counts/physicians"] == 6
    usage = summary["usage"]
    assert usage["total_cost_usd"] > 0
    assert run.summary["cost/total_usd"] == pytest.approx(usage["total_cost_usd"])
    assert run.summary["usage/judge/prompt_tokens"] == usage["judge"]["prompt_tokens"]
    assert run.summary["by_category/nrows"] == len(summary["by_category"])
    assert run.summary["per_physician/nrows"] == 6
    assert run.summary["per_row/nrows"] == 40
    progress = [h for h in run.history if "progress/examples_done" in h]
    assert progress[-1]["progress/examples_done"] == 40
    (artifact,) = [a for a in run.artifacts if a.type == wandb_content.ARTIFACT_TYPE]
    assert {"summary.json", "meta_eval.jsonl", "results/state.json"} <= {
        c.path for c in artifact.manifest.contents
    }
    assert table_rows(artifact, "per_row") == 40


def test_a_job_failing_before_its_first_result_opens_no_run(tmp_path) -> None:
    plan = tracking.RunPlan("someid", "offline", "p", None, None, tmp_path, {"mode": "offline"})
    tracker = tracking.Tracker(plan)
    tracker.fail()
    assert tracker.worker is None and not (tmp_path / "wandb").exists()


def no_wandb_login(tmp_path: Path, monkeypatch) -> dict[str, str]:
    """No W&B credentials anywhere: no key, an empty config dir, no netrc (NETRC names a missing
    file: W&B and the harness read it instead of ~/.netrc, and W&B's settings come from
    WANDB_CONFIG_DIR instead of ~/.config/wandb). HOME is left as it is: the import-time paths
    of the libraries do not move (the run is forked from tests/zygote.py) and no credential is
    read from it."""
    for name in ("WANDB_API_KEY", "WANDB_MODE", "WANDB_DISABLED", "WANDB_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    return {
        **wandb_env(tmp_path),
        "WANDB_CONFIG_DIR": str(home / "wandb-config"),
        "NETRC": str(home / "no-netrc"),
    }


def test_online_without_login_fails_before_any_request(tmp_path, monkeypatch) -> None:
    out = tmp_path / "run"
    env = no_wandb_login(tmp_path, monkeypatch)
    with ForkedServer([]) as server:
        began = time.monotonic()
        result = run_cli(
            "experiment=demo", "wandb=online", "model=openai_compatible", "model.name=m",
            f"model.base_url={server.base_url}", "model.api_key_env=HB_WANDB_SECRET",
            f"hydra.run.dir={out}", env={**env, "HB_WANDB_SECRET": SECRET},
        )  # fmt: skip
        elapsed = time.monotonic() - began
        stats_url = server.base_url.removesuffix("/v1") + "/stats"
        requests = json.loads(urllib.request.urlopen(stats_url).read())["requests"]
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1, result.stderr
    assert "wandb login" in errors[0] and "wandb=offline" in errors[0]
    assert requests == 0 and elapsed < 30  # fails at start-up, not after a login wait
    assert sorted(p.name for p in out.iterdir()) == ["healthbench.log"]  # only its log
    assert not (tmp_path / "wandb_dir").exists()


@pytest.mark.parametrize(
    ("variables", "expected"),
    [({"WANDB_MODE": "disabled"}, None), ({"WANDB_DISABLED": "true"}, None),
     ({"WANDB_MODE": "offline"}, "offline")],
)  # fmt: skip
def test_auto_follows_the_wandb_environment(tmp_path, monkeypatch, variables, expected) -> None:
    env = no_wandb_login(tmp_path, monkeypatch)
    out = tmp_path / "run"
    result = run_cli(
        "experiment=demo", "wandb=auto", "sampling.num_examples=3", f"hydra.run.dir={out}",
        env={**env, **variables},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    described = json.loads((out / "summary.json").read_text())["wandb"]
    assert (described and described["mode"]) == expected
    assert bool(offline_runs(tmp_path / "wandb_dir")) == (expected is not None)


def test_an_explicit_mode_wins_over_the_environment(tmp_path, monkeypatch) -> None:
    env = no_wandb_login(tmp_path, monkeypatch)
    out = tmp_path / "run"
    result = run_cli(
        "experiment=demo", "wandb.mode=offline", "sampling.num_examples=3",
        f"hydra.run.dir={out}", env={**env, "WANDB_MODE": "disabled"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (run_dir,) = offline_runs(tmp_path / "wandb_dir")
    assert read_run(run_dir).exit_code == 0


def test_an_unreachable_wandb_server_costs_nothing_local(tmp_path, monkeypatch) -> None:
    """Logged in, but the W&B server is down: the run completes, its W&B data goes offline."""
    env = no_wandb_login(tmp_path, monkeypatch)
    out = tmp_path / "run"
    result = run_cli(
        "experiment=demo", "wandb=online", f"hydra.run.dir={out}",
        env={**env, "WANDB_API_KEY": "k" * 40, "WANDB_BASE_URL": "http://127.0.0.1:9"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "W&B server http://127.0.0.1:9 unreachable" in result.stdout + result.stderr
    for name in ("summary.json", "examples.jsonl", "per_criterion.jsonl", "report.html"):
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["wandb"]["mode"] == "offline"
    (run_dir,) = offline_runs(tmp_path / "wandb_dir")
    assert f"wandb sync {run_dir}" in result.stderr
    run = read_run(run_dir)
    assert run.run_id == summary["wandb"]["run_id"] and run.exit_code == 0
    assert run.summary["overall_score"] == pytest.approx(summary["metrics"]["overall_score"])
    output = result.stdout + result.stderr
    assert "weave" not in output.lower()  # no third-party lines
    assert not [line for line in output.splitlines() if line.startswith("wandb:")]


def test_a_resumed_run_continues_its_wandb_run(tmp_path) -> None:
    out = tmp_path / "run"
    first = run_cli(
        "experiment=demo", "budget.max_usd=0.05", f"hydra.run.dir={out}", env=wandb_env(tmp_path)
    )
    assert first.returncode == 4, first.stderr
    second = run_cli(f"resume={out}", "budget.max_usd=null", env=wandb_env(tmp_path))
    assert second.returncode == 0, second.stderr
    parts = [read_run(d) for d in offline_runs(tmp_path / "wandb_dir")]
    summary = json.loads((out / "summary.json").read_text())
    assert len(parts) == 2 and {p.run_id for p in parts} == {summary["wandb"]["run_id"]}
    assert parts[-1].summary["counts/rows_scored"] == 24
    wandb_dir = tmp_path / "wandb_dir" / "wandb"
    assert f"wandb sync {wandb_dir}/offline-run-*-{parts[0].run_id}" in second.stdout


class RefusingWandbServer(ThreadingHTTPServer):
    """A loopback W&B server that knows the login but refuses to create or resume any run."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if b"viewer" in body:  # the start-up check: a valid login
                    reply, code = {"data": {"viewer": {"entity": "me", "teams": {}}}}, 200
                else:  # everything wandb.init and the run send
                    reply, code = {"data": None}, 400
                data = json.dumps(reply).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def test_a_wandb_server_error_after_the_start_costs_nothing_local(tmp_path, monkeypatch) -> None:
    """The login checks out at start, then the server refuses the run: a warning, the local
    outputs in full, and the W&B data in an offline run with the `wandb sync` command."""
    env = no_wandb_login(tmp_path, monkeypatch)
    out = tmp_path / "run"
    server = RefusingWandbServer()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        result = run_cli(
            "experiment=demo", "wandb=online", "sampling.num_examples=5", f"hydra.run.dir={out}",
            env={**env, "WANDB_API_KEY": "k" * 40, "WANDB_BASE_URL": server.url},
        )  # fmt: skip
    finally:
        server.shutdown()
    assert result.returncode == 0, result.stderr
    assert "could not open the online run" in result.stdout + result.stderr
    assert "writing it offline instead" in result.stdout + result.stderr
    for name in ("summary.json", "examples.jsonl", "per_criterion.jsonl", "report.html"):
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    (run_dir,) = offline_runs(tmp_path / "wandb_dir")
    assert f"wandb sync {run_dir}" in result.stderr
    run = read_run(run_dir)
    assert run.run_id == summary["wandb"]["run_id"] and run.exit_code == 0
    assert run.summary["overall_score"] == pytest.approx(summary["metrics"]["overall_score"])
    assert run.summary["counts/rows"] == 5


class RecordingServer(ThreadingHTTPServer):
    """A loopback HTTP server that answers 404 to everything and records the paths asked."""

    def __init__(self) -> None:
        paths: list[str] = []
        self.paths = paths

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                paths.append(self.path)
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST

        super().__init__(("127.0.0.1", 0), Handler)


def test_an_offline_run_sends_nothing_to_the_wandb_server(tmp_path, monkeypatch) -> None:
    """An offline run's W&B worker posts nothing, not even wandb's own usage metrics at exit
    (which wait 10 s on a server that accepts and never answers)."""
    env = no_wandb_login(tmp_path, monkeypatch)
    out = tmp_path / "run"
    server = RecordingServer()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        result = run_cli(
            "experiment=demo", "wandb=offline", "sampling.num_examples=3", f"hydra.run.dir={out}",
            env={**env, "WANDB_API_KEY": "k" * 40, "WANDB_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}"},
        )  # fmt: skip
    finally:
        server.shutdown()
    assert result.returncode == 0, result.stderr
    (run_dir,) = offline_runs(tmp_path / "wandb_dir")
    assert read_run(run_dir).exit_code == 0
    assert server.paths == []
