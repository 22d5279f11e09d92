"""``python -m rnnbench.lm``: the ``lm`` command on its own, for scripts that must not depend on
the rest of the command line (benchmarks/lm_h100.sh). ``rnnbench lm`` is the same function."""

import sys

import typer

from ..errors import UsageError
from .cli import lm


def main() -> None:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command()(lm)
    try:
        app()
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)


main()
