"""`python -m healthbench_exp.cache`: see and manage the persistent response cache.

    stats                          entries and bytes per model/judge and settings, oldest and
                                   newest, the hit rate of the last runs
    prune --older-than 30d         remove entries stored more than 30 days ago
    prune --name gpt-4.1 [--role judge]   remove one model's or judge's entries
    prune --max-size 500MB         remove the oldest entries until the rest take 500 MB
    clear                          remove every entry

`prune` and `clear` list what they would remove and remove nothing unless given `--yes`. The
cache directory is `--dir`, else $HEALTHBENCH_CACHE_DIR, else ~/.cache/healthbench_exp/cache,
as a run resolves it (a run's `cache.dir` overrides both: pass it as `--dir`). Safe while a run
writes to the same cache: entries are removed in short transactions and never torn. A cache
this user may not write (a shared, read-only copy) is read read-only: `stats` and the listing
work, `--yes` is refused.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys

from healthbench_exp.core import standard_streams
from healthbench_exp.core.run_end import Exit
from healthbench_exp.model.cache import Selection, cache_dir
from healthbench_exp.model.cache.commands import clear, parse_age, parse_size, prune, stats


def parser() -> argparse.ArgumentParser:
    """The command line: `stats`, `prune` and `clear`, each with its own `--help`."""
    top = argparse.ArgumentParser(
        prog="python -m healthbench_exp.cache",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    commands = top.add_subparsers(dest="command", required=True, metavar="{stats,prune,clear}")
    directory = argparse.ArgumentParser(add_help=False)
    directory.add_argument(
        "--dir",
        default=None,
        help="the cache directory (default: $HEALTHBENCH_CACHE_DIR, else "
        "~/.cache/healthbench_exp/cache)",
    )
    acting = argparse.ArgumentParser(add_help=False)
    acting.add_argument(
        "--yes", action="store_true", help="remove them (without it: only list what would go)"
    )
    commands.add_parser(
        "stats",
        parents=[directory],
        help="entries, bytes, oldest/newest per model and judge; hit rate of the last runs",
        description="Entries and bytes per model/judge and settings, oldest and newest, and the "
        "hit rate of the last runs.",
    )
    pruning = commands.add_parser(
        "prune",
        parents=[directory, acting],
        help="remove entries by age, model/judge name or size budget (lists them without --yes)",
        description="Remove the entries all the given criteria pick (by age, by name), then "
        "the oldest of the rest until they fit --max-size. Without --yes only lists them.",
    )
    pruning.add_argument("--older-than", metavar="AGE", help="stored longer ago: 30d, 12h, 2w")
    pruning.add_argument("--name", help="of this model or judge name ('unknown': no name)")
    pruning.add_argument("--role", choices=("model", "judge"), help="only as this role")
    pruning.add_argument("--max-size", metavar="SIZE", help="keep the newest within: 500MB, 2GB")
    commands.add_parser(
        "clear",
        parents=[directory, acting],
        help="remove every entry (lists them without --yes)",
        description="Remove every entry and the recorded runs. Without --yes only lists them.",
    )
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    directory = cache_dir(args.dir)
    try:
        if args.command == "stats":
            lines = stats(directory)
        elif args.command == "clear":
            lines = clear(directory, args.yes)
        else:
            selection = Selection(
                older_than_s=None if args.older_than is None else parse_age(args.older_than),
                name=args.name,
                role=args.role,
                max_bytes=None if args.max_size is None else parse_size(args.max_size),
            )
            lines = prune(directory, selection, args.yes)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return Exit.REFUSED
    except sqlite3.Error as exc:
        print(f"error: cannot read the response cache in {directory} ({exc})", file=sys.stderr)
        return Exit.REFUSED
    print("\n".join(lines))
    return Exit.COMPLETED


if __name__ == "__main__":
    standard_streams.guard()  # `stats | head -3` exits 0, no traceback (core.standard_streams)
    raise SystemExit(main())
