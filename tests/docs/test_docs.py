"""The docs say what is true: their links resolve, their commands compose, their tables are the
schema's, and no page names a retired preset, a missing file or the history of the work.

Everything here runs in this process, with no network: each `python -m healthbench_exp ...`
command of a code block is checked as the CLI checks overrides (`cli.overrides`) and composed as
the CLI composes it (`healthbench_exp.load_config`, each job of a sweep), and nothing is run.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import shlex
import unicodedata
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import pytest

from healthbench_exp import load_config
from healthbench_exp.cli.overrides import check_overrides
from healthbench_exp.cli.sweep_checks import job_overrides
from healthbench_exp.config.schema import Config, EndpointConfig

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted(
    [REPO / "README.md", REPO / "conf" / "README.md", *(REPO / "docs").glob("*.md")]
    + ([REPO / "CHANGELOG.md"] if (REPO / "CHANGELOG.md").exists() else [])
)
GENERATOR = REPO / "docs" / "generate_configuration.py"
FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
COMMAND = re.compile(r"python3? -m healthbench_exp(?=\s|$)")
# a flag of Hydra's that takes the next argument
FLAG_WITH_VALUE = {"--cfg", "-c", "--info", "--config-path", "-cp", "--config-name", "-cn"}
# keys the CLI reads before composing (cli.app): a run directory, not a config key
RUN_DIR_KEYS = ("resume", "regrade")
# the overrides that choose presets (what can name a retired model)
PRESET_KEYS = {"model", "judge", "jury", "experiment", "task", "completions", "difficulty"}


def rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def prose_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of the lines outside fenced code blocks."""
    lines, fenced = [], False
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((number, line))
    return lines


def code_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of the lines inside fenced code blocks, continuations joined."""
    lines: list[tuple[int, str]] = []
    fenced, pending, start = False, "", 0
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            continue
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        lines.append((start, pending + line))
        pending = ""
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, markup and punctuation dropped (hyphens and
    underscores kept), each space a hyphen."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())  # a link: its text
    text = text.replace("`", "").lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in ("L", "N"))
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in `path`, with GitHub's -1, -2 suffixes for repeats."""
    seen: dict[str, int] = {}
    found = set()
    for _, line in prose_lines(path):
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        found.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return found


@dataclass(frozen=True)
class Link:
    page: Path
    line: int
    target: str

    def __str__(self) -> str:
        return f"{rel(self.page)}:{self.line}:{self.target}"


def links() -> list[Link]:
    found = []
    for page in PAGES:
        for number, line in prose_lines(page):
            for target in LINK.findall(line):
                if not re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                    found.append(Link(page, number, target))
    return found


@pytest.mark.parametrize("link", links(), ids=str)
def test_every_relative_link_and_anchor_resolves(link: Link) -> None:
    path_part, _, anchor = link.target.partition("#")
    target = (link.page.parent / path_part).resolve() if path_part else link.page
    assert target.exists(), f"{link}: no file {path_part}"
    if anchor:
        assert target.suffix == ".md", f"{link}: an anchor into a file that is not a page"
        assert anchor in anchors(target), (
            f"{link}: {rel(target)} has no heading #{anchor} (its anchors: "
            f"{', '.join(sorted(anchors(target)))})"
        )


@dataclass(frozen=True)
class Command:
    page: Path
    line: int
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"{rel(self.page)}:{self.line}: {' '.join(self.args)}"


def command_args(text: str) -> tuple[str, ...] | None:
    """The arguments of the first `python -m healthbench_exp` command in a shell line (up to
    `&&`, `|`, `;` or a comment); None when the line has none."""
    match = COMMAND.search(text)
    if match is None:
        return None
    rest = re.split(r"&&|\|\||[|;]", text[match.end() :])[0]
    rest = re.sub(r"<[^>]*>", "PLACEHOLDER", rest)  # `<run dir>`: a path the reader fills in
    return tuple(shlex.split(rest, comments=True))


def commands() -> list[Command]:
    found = []
    for page in PAGES:
        for number, line in code_lines(page):
            args = command_args(line)
            if args is not None:
                found.append(Command(page, number, args))
    return found


def overrides_of(args: tuple[str, ...]) -> list[str]:
    """A command's overrides, without Hydra's flags (`-m`, `--cfg job`, `--help`)."""
    kept, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg.startswith("-"):
            skip = arg in FLAG_WITH_VALUE
        else:
            kept.append(arg)
    return kept


def endpoints(config: Config) -> list[tuple[str, EndpointConfig]]:
    return [
        ("model", config.model),
        ("judge", config.judge),
        *((f"jury[{i}]", member) for i, member in enumerate(config.jury_members)),
    ]


def test_the_docs_show_commands() -> None:
    """The extraction finds the commands (a broken pattern would check nothing)."""
    found = {rel(c.page) for c in commands()}
    assert {"README.md", "docs/getting-started.md", "docs/scaling.md"} <= found


def package_presets(group: str) -> set[str]:
    return {p.stem for p in (REPO / "healthbench_exp" / "conf" / group).glob("*.yaml")}


def composable(overrides: list[str]) -> list[str]:
    """The overrides to compose: without the run directories the CLI reads first (`resume=`,
    `regrade=`), and, where the command adds a `hydra.searchpath` directory of the reader's own
    presets, without the choices of those presets (they are not in the repository)."""
    kept = [a for a in overrides if a.split("=", 1)[0] not in RUN_DIR_KEYS]
    if not any(a.startswith("hydra.searchpath=") for a in kept):
        return kept
    own = []
    for arg in kept:
        key, _, value = arg.partition("=")
        if key == "jury" or (key in ("model", "judge") and value not in package_presets(key)):
            continue
        own.append(arg)
    return own


@functools.cache
def composed(job: tuple[str, ...]) -> Config:
    """A job's config, composed once per distinct command line (pages repeat commands)."""
    return load_config(list(job))[0]


def distinct_jobs(jobs: list[list[str]]) -> list[list[str]]:
    """The first job of each distinct choice of presets and shutdown dates: jobs that differ
    only in other values (a temperature sweep) compose alike, and `check_overrides` has checked
    each value's type already."""
    seen, kept = set(), []
    for job in jobs:
        choice = tuple(a for a in job if a.split("=")[0] in PRESET_KEYS or ".shutdown_date=" in a)
        if choice not in seen:
            seen.add(choice)
            kept.append(job)
    return kept


@pytest.mark.filterwarnings("ignore:provider=hydra.searchpath")  # a reader's own directory
@pytest.mark.parametrize("command", commands(), ids=str)
def test_every_docs_command_composes_and_names_no_retired_preset(command: Command) -> None:
    """Its groups, presets and keys exist (one line naming the key otherwise, as the CLI says),
    every job composes, and no model, judge or jury member of a job is past its shutdown date
    (unless the command sets that date itself, to show the refusal)."""
    overrides = overrides_of(command.args)
    sweep = ["-m"] if "-m" in command.args else []  # a comma list sweeps only with it
    if any(arg.split("=", 1)[0] == "resume" for arg in overrides):
        check_overrides([*sweep, *(a for a in overrides if a.split("=", 1)[0] != "resume")])
        return  # the config is the stopped run's own
    overrides = composable(overrides)
    check_overrides([*sweep, *overrides])
    dated = {a.split(".", 1)[0] for a in overrides if ".shutdown_date=" in a}
    today = date.today()
    for job in distinct_jobs(job_overrides(overrides) if "-m" in command.args else [overrides]):
        for role, endpoint in endpoints(composed(tuple(job))):
            day = endpoint.shutdown_date
            assert role in dated or day is None or date.fromisoformat(day) > today, (
                f"{command}: {role} {endpoint.name} is retired since {day}; use one of "
                f"{', '.join(endpoint.replacements)}"
            )


def generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("generate_configuration", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_configuration_tables_are_what_the_generator_writes() -> None:
    module = generator()
    page = module.PAGE.read_text()
    assert page == module.render(page), (
        "docs/configuration.md's generated tables differ from config/schema.py and conf/: "
        f"run {module.COMMAND}"
    )


# the history of the work, or a document that is not in the repository
HISTORY = re.compile(
    r"\bSPEC\b|\bsession \d|\bissue #?\d|\bround \d|\bas of (?:this|today)\b", re.IGNORECASE
)


@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_no_page_cites_the_spec_or_the_history_of_the_work(page: Path) -> None:
    found = [
        f"{rel(page)}:{n}: {line.strip()[:100]}"
        for n, line in enumerate(page.read_text().splitlines(), start=1)
        if HISTORY.search(line)
    ]
    assert not found, "\n".join(found)


# a repository path in inline code: `healthbench_exp/model/http.py`, `bench/throughput.py`
PATH = re.compile(r"`([A-Za-z0-9_][\w.-]*(?:/[\w.-]+)+\.(?:py|md|yaml|toml|sh|jsonl))`")
# where a page's short names start: `model/http.py` is `healthbench_exp/model/http.py`
ROOTS = ("", "healthbench_exp/", "healthbench_exp/conf/", "healthbench_exp/output/")


def in_repository(name: str) -> bool:
    """Whether `name` starts in a folder of the repository (not a reader's own `my_conf/`)."""
    return any((REPO / root / name.split("/")[0]).is_dir() for root in ROOTS)


@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_every_file_a_page_names_exists(page: Path) -> None:
    missing = [
        f"{rel(page)}:{n}: {name}"
        for n, line in enumerate(page.read_text().splitlines(), start=1)
        for name in PATH.findall(line)
        if in_repository(name) and not any((REPO / root / name).exists() for root in ROOTS)
    ]
    assert not missing, "no such file:\n" + "\n".join(missing)


def test_the_readme_opens_with_the_demo_and_the_tests_and_is_short() -> None:
    text = (REPO / "README.md").read_text()
    first_block = text.split("```")[1]
    assert "python -m healthbench_exp experiment=demo" in first_block
    assert "python -m pytest -q" in first_block
    assert text.split("\n\n")[1].startswith("```"), "README.md must open with the commands"
    assert len(text.encode()) < 10_000, f"README.md is {len(text.encode())} bytes"


def test_the_performance_page_is_at_most_150_lines() -> None:
    lines = (REPO / "docs" / "performance.md").read_text().splitlines()
    assert len(lines) <= 150, f"docs/performance.md has {len(lines)} lines"


def programs() -> list[tuple[str, str]]:
    """(where, what) of every `python -m <module>` and `python <script>.py` in a code block."""
    found = []
    for page in PAGES:
        for number, line in code_lines(page):
            for kind, name in re.findall(r"python3? (-m )?([\w./-]+)", line):
                if kind or name.endswith(".py"):
                    found.append((f"{rel(page)}:{number}", ("-m " if kind else "") + name))
    return found


@pytest.mark.parametrize(("where", "program"), programs(), ids=lambda x: str(x))
def test_every_program_a_docs_command_runs_exists(where: str, program: str) -> None:
    if program.startswith("-m "):
        module = program[3:]
        if module in ("venv", "pip", "pytest", "llama_cpp.server"):
            return  # the standard library's, and the tools the install brings
        assert importlib.util.find_spec(module) is not None, f"{where}: no module {module}"
    else:
        assert (REPO / program).is_file(), f"{where}: no script {program}"
