"""Writing a comparison into its folder (`aggregate --out`, or the sweep directory), or one line
saying why it cannot be: a read-only or full disk, a file where a folder must be."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from healthbench_exp.core.run_end import Exit


def written_or_exit(write: Callable[[], None], out_dir: Path) -> None:
    """Run `write` (which writes the comparison's files into `out_dir`); if the system refuses
    (an OSError), print one line naming the path and the reason, and exit 2."""
    try:
        write()
    except OSError as exc:
        print(
            f"error: cannot write into {out_dir} ({exc.filename}: {exc.strerror}); choose a "
            "--out folder you can write",
            file=sys.stderr,
        )
        raise SystemExit(Exit.REFUSED) from None
