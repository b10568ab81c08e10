"""``discharge-fuzz``: the command line.

Exit codes: 0 nothing new found, 1 new (unknown) findings, 2 bad usage or the
run itself failed.
"""
from __future__ import annotations

import argparse
import sys

EXIT_CLEAN, EXIT_FOUND, EXIT_ERROR = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        self.exit(EXIT_ERROR, f"discharge-fuzz: error: {message}\n")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="discharge-fuzz", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    from fuzz import run_command  # the campaign
    run_command.add(sub)
    from fuzz import triage  # replay / minimize / report
    triage.add_commands(sub)
    from fuzz import bisect  # affected releases
    bisect.add(sub)
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    from fuzz import triage
    if args.command in triage.COMMANDS:
        return triage.main(args)
    if args.command == "bisect":
        from fuzz import bisect
        return bisect.main(args)
    from fuzz import run_command
    return run_command.main(args)


if __name__ == "__main__":
    sys.exit(main())
