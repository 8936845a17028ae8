"""A new user's first hour: the commands they run first and the mistakes they make, checked on
what they read (exit codes, the first error line, the files and their status, the console's key
lines).

The README's demo, the offline commands of docs/getting-started.md and the pages it links
(a second run, a dry run and a pilot, a meta-eval, a calibrated run, a judge's shutdown date,
the report), and the common mistakes of issue 45 (a comma list without `-m`, a key without `+`,
a jury given without brackets or without its key). Each test fails when the problem it names
comes back. Runs are forked from tests/zygote.py (`run_cli`); the demo itself runs once per
session (`demo_run`), and the runs that need its response cache start from a copy of it.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from datetime import date, timedelta
from pathlib import Path

from tests.conftest import DemoRun
from tests.dates import in_days
from tests.e2e.test_e2e import REPO, run_cli

DEMO = ("experiment=demo", "wandb=disabled", "runner.progress=false")
DOCS = REPO / "docs"


def error_line(result: subprocess.CompletedProcess) -> str:
    """A refused command as a user reads it: exit 2 and one line, `error: ...`."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    return result.stderr.strip()


def status(run_dir: Path) -> str:
    return json.loads((run_dir / "status.json").read_text())["status"]


def warm(cache: Path, demo_run: DemoRun) -> Path:
    """This test's response cache, as the README's demo left it (every call answered)."""
    shutil.copytree(demo_run.directory.parent / "cache", cache, dirs_exist_ok=True)
    return cache


# ---- the README's demo and what the docs say of it -----------------------------------------


def test_the_readme_demo_completes_with_its_score_and_files(demo_run: DemoRun) -> None:
    assert demo_run.returncode == 0, demo_run.stderr
    assert "  overall_score          0.2879  [0.1740, 0.4019]  n=24   (headline)" in demo_run.stdout
    assert "rows scored 24/24, failed 0, not run 0; ungraded criteria 0/106" in demo_run.stdout
    run_dir = demo_run.directory
    assert status(run_dir) == "completed"
    for name in ("summary.json", "per_criterion.jsonl", "examples.jsonl", "report.html",
                 "report_examples.js", "results"):  # fmt: skip
        assert (run_dir / name).exists(), name


def test_a_second_demo_run_answers_from_the_cache_as_the_docs_say(
    tmp_path: Path, demo_run: DemoRun, isolated_cache: Path
) -> None:
    """Issue 45 item 11: the sample output was shown without saying that a second run answers
    from the cache (model 0, judge 0, $0.0000)."""
    warm(isolated_cache, demo_run)
    result = run_cli(*DEMO, f"hydra.run.dir={tmp_path / 'again'}")
    assert result.returncode == 0, result.stderr
    said = "requests: model 0, judge 0 (from the cache, not paid again: model 24, judge 106)"
    assert said in result.stdout and "  total cost $0.0000" in result.stdout
    assert "  overall_score          0.2879" in result.stdout  # the same scores
    page = (DOCS / "getting-started.md").read_text()
    sample = page.split("## Read the results", 1)[1].split("\n## ", 1)[0]
    flat = " ".join(sample.split())
    assert "model 0, judge 0 (from the cache, not paid again: model 24, judge 106)" in flat
    assert "total cost $0.0000" in flat
    readme = " ".join((REPO / "README.md").read_text().split())
    assert "run the same command again and the response cache answers every call" in readme


def test_the_report_explains_unclipped_example_scores_and_negative_criteria(
    demo_run: DemoRun,
) -> None:
    """Issue 45 item 12: per-example scores below 0 (-0.28) with no word why, and negative
    criteria not explained on the page."""
    run_dir = demo_run.directory
    companion = (run_dir / "report_examples.js").read_text()
    scores = [float(s) for s in re.findall(r'"score":(-?[0-9.]+)', companion)]
    assert min(scores) == -0.28  # the reference's per-example score: unclipped
    page = " ".join((run_dir / "report.html").read_text().split())
    assert "it is not clipped, so a reply that met a negative criterion can score below 0" in page
    assert "A negative criterion (negative points) describes what a reply should not do" in page


# ---- a dry run and a pilot ------------------------------------------------------------------


def test_a_dry_run_says_how_it_counted_prompts_in_one_voice(tmp_path: Path) -> None:
    """Issue 45 item 6: "approximation: 4 characters per token (tiktoken's encoding could not
    be loaded)", then "prompts counted by the tokenizer"."""
    run_dir = tmp_path / "dry"
    result = run_cli(*DEMO, "dry_run=true", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr
    assert status(run_dir) == "dry_run" and (run_dir / "estimate.json").is_file()
    out = result.stdout
    assert "Dry run: nothing was sent (24 rows)" in out
    assumed = [line for line in out.splitlines() if " assumed: " in line]
    assert len(assumed) == 2, out  # a cold cache: both roles' rates assumed
    if "approximation: 4 characters per token" in out:
        words = "prompt tokens approximated at 4 characters per token"
    else:
        words = "prompts counted by tiktoken o200k_base"
    assert all(words in line for line in assumed), assumed
    assert "counted by the tokenizer" not in out


def test_a_pilot_on_a_warm_cache_names_the_rows_it_measured(
    tmp_path: Path, demo_run: DemoRun, isolated_cache: Path
) -> None:
    """Issue 45 item 10: a 3-row pilot with a warm cache said "measured on this pilot's 24
    replies ... the pilot's 24 rows"."""
    warm(isolated_cache, demo_run)
    result = run_cli(*DEMO, "dry_run.pilot=3", f"hydra.run.dir={tmp_path / 'pilot'}")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Dry run: the pilot's 3 rows were sent (0 paid calls, $0.0000" in out
    rows = "to 24 rows (the pilot's 3 and 21 the response cache already held)"
    assert "judge measured on 106 replies of this judge and its settings " + rows in out
    assert "model measured on 24 replies of this model and its settings " + rows in out
    assert "bootstrap resamples of the 24 measured rows" in out
    assert "pilot's 24" not in out


# ---- a meta-eval, a calibrated run, a judge's shutdown date ---------------------------------


def test_the_meta_eval_console_describes_each_figure_once(tmp_path: Path) -> None:
    """Issue 45 item 9: four physician figures, two described alike."""
    run_dir = tmp_path / "meta"
    result = run_cli(*DEMO, "task=meta_eval", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr
    assert status(run_dir) == "completed"
    lines = result.stdout.splitlines()
    physicians = [line for line in lines if line.startswith("  physicians  ")]
    judge = [line for line in lines if line.startswith("  judge       ")]
    assert len(physicians) == 4 and len(judge) == 2, result.stdout
    described = [line.split("(", 1)[1] for line in physicians + judge]
    assert len(set(described)) == 6, described
    assert "  physicians  0.6138  (pooled: each physician's F1 over all rows, then the mean " \
        "weighted by their pairs)" in lines  # fmt: skip


def test_malformed_verdicts_leave_the_share_the_docs_say_ungraded(tmp_path: Path) -> None:
    """Issue 45 item 9: the docs said `malformed_rate=0.2` makes "one fifth of verdicts
    unparseable" where 10% end ungraded; they now say what the rate does and what ends
    ungraded (4 of the sample's 40 rows with no parse retry)."""
    run_dir = tmp_path / "malformed"
    result = run_cli(
        *DEMO, "task=meta_eval", "judge.name=judge-a", "offline_server.malformed_rate=0.2",
        "judge.max_parse_retries=0", "runner.max_failure_fraction=0.5",
        f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "rows graded 36/40, ungraded 4" in result.stdout
    endpoint = " ".join((DOCS / "builtin-endpoint.md").read_text().split())
    assert "the 40-row meta-eval sample at 0.2 leaves 4 rows, 10%, ungraded" in endpoint
    judges = " ".join((DOCS / "judges.md").read_text().split())
    assert "one fifth of verdicts unparseable" not in judges
    assert "here 4 of each judge's 40 rows (10%" in judges


def test_a_calibrated_run_says_so_on_the_console(
    tmp_path: Path, demo_run: DemoRun, isolated_cache: Path
) -> None:
    """Issue 45 item 8: a run with `calibration.meta_eval_run=...` printed nothing about
    calibration (its console was the plain demo's)."""
    meta = tmp_path / "meta-demo"
    assert run_cli(*DEMO, "task=meta_eval", f"hydra.run.dir={meta}").returncode == 0
    warm(isolated_cache, demo_run)
    run_dir = tmp_path / "calibrated"
    result = run_cli(*DEMO, f"calibration.meta_eval_run={meta}", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if "calibrated consensus rates" in x)
    assert f"judge offline-judge against the physicians of {meta}" in line
    assert "0 of 27 categories corrected, 27 not" in line
    assert "every category in report.html and summary.json (calibrated)" in line
    assert len(json.loads((run_dir / "summary.json").read_text())["calibrated"]["criteria"]) == 27


def test_a_shutdown_date_set_on_the_command_line_is_reported_as_the_users(
    tmp_path: Path,
) -> None:
    """Issue 45 item 7: `judge.shutdown_date=...` was reported "per the preset"."""
    began = date.today()
    soon = (began + timedelta(days=20)).isoformat()
    result = run_cli(
        *DEMO, f"judge.shutdown_date={soon}", "dry_run=true", f"hydra.run.dir={tmp_path / 'd'}"
    )
    assert result.returncode == 0, result.stderr
    warning = next(x for x in (result.stdout + result.stderr).splitlines() if "shuts down" in x)
    assert any(
        f"shuts down on {soon}, {days} (per judge.shutdown_date, set on the command line)"
        in warning
        for days in in_days(soon, began)
    ), warning
    past = (date.today() - timedelta(days=1)).isoformat()
    run_dir = tmp_path / "retired"
    retired = run_cli(*DEMO, f"judge.shutdown_date={past}", f"hydra.run.dir={run_dir}")
    line = error_line(retired)
    assert f"shut down since {past} (per judge.shutdown_date, set on the command line)" in line
    assert "per the preset" not in line
    assert sorted(p.name for p in run_dir.iterdir()) == ["healthbench.log"]  # nothing else


# ---- the common mistakes: one line, exit 2, what to write instead ---------------------------


def test_a_comma_list_without_m_shows_the_command_with_it(tmp_path: Path) -> None:
    """Issue 45 item 3: Hydra's five-line "Ambiguous value", exit 1."""
    run_dir = tmp_path / "run"
    line = error_line(
        run_cli(*DEMO, "model=offline,gpt41mini", "dry_run=true", f"hydra.run.dir={run_dir}")
    )
    assert line.startswith("error: model=offline,gpt41mini: a comma list sweeps")
    # a sweep ignores hydra.run.dir: the directory given becomes the sweep's
    assert line.endswith(
        "only with -m: python -m healthbench_exp -m experiment=demo wandb=disabled "
        "runner.progress=false model=offline,gpt41mini dry_run.enabled=true "
        f"hydra.sweep.dir={run_dir}"
    )
    assert not run_dir.exists()
    # the command as printed runs the sweep into that directory
    hinted = shlex.split(line.split("only with -m: ", 1)[1])
    assert hinted[:3] == ["python", "-m", "healthbench_exp"]
    swept = run_cli(*hinted[3:])
    assert swept.returncode == 0, swept.stderr
    assert sorted(p.parent.name for p in run_dir.glob("*/estimate.json")) == ["0", "1"]


def test_a_key_to_add_says_to_write_it_with_plus_and_that_composes(tmp_path: Path) -> None:
    """Issue 45 item 4: "Key 'seed' is not in struct", exit 1."""
    line = error_line(run_cli(*DEMO, "model.extra_body.seed=1", f"hydra.run.dir={tmp_path}/a"))
    assert line.endswith("write +model.extra_body.seed=1")
    written = run_cli(*DEMO, "+model.extra_body.seed=1", "dry_run=true",
                      f"hydra.run.dir={tmp_path / 'b'}")  # fmt: skip
    assert written.returncode == 0, written.stderr


def test_a_jury_without_brackets_is_shown_whole(tmp_path: Path) -> None:
    """Issue 45 item 5: `jury=gpt54,gpt41mini` answered "write jury=[gpt54]"."""
    line = error_line(run_cli(*DEMO, "jury=gpt54,gpt41mini", f"hydra.run.dir={tmp_path}/r"))
    assert "write jury=[gpt54,gpt41mini]" in line and "jury=[gpt54]" not in line


def test_a_jury_member_without_its_key_names_the_variable_and_a_real_override(
    tmp_path: Path,
) -> None:
    """Issue 45 item 5: "named by gpt-5.4-2026-03-05.api_key_env, or choose
    gpt-5.4-2026-03-05=offline": neither is an override that exists."""
    run_dir = tmp_path / "jury"
    result = run_cli(*DEMO, "jury=[gpt54]", f"hydra.run.dir={run_dir}", env={"OPENAI_API_KEY": ""})
    line = error_line(result)
    assert line == (
        "error: jury member gpt54 (gpt-5.4-2026-03-05): set the environment variable "
        "OPENAI_API_KEY to your API key (named by its preset's api_key_env, or run without it: "
        "jury=[])"
    )
    assert "gpt-5.4-2026-03-05.api_key_env" not in line and "=offline" not in line
    assert sorted(p.name for p in run_dir.iterdir()) == ["healthbench.log"]
