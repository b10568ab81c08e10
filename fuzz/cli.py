"""``discharge-fuzz``: the command line.

Exit codes (`fuzz.exits`): 0 nothing new found, 1 new (unknown) findings,
2 bad usage or the run itself failed.
"""
from __future__ import annotations

import argparse
import sys

from fuzz.campaign import run_command  # the campaign
from fuzz.exits import EXIT_ERROR
from fuzz.triage import commands  # replay / minimize / report


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        self.exit(EXIT_ERROR, f"discharge-fuzz: error: {message}\n")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="discharge-fuzz", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    from fuzz.triage import bisect  # affected releases; JAX: kept out of `import fuzz.cli`
    run_command.add(sub)
    commands.add_commands(sub)
    bisect.add(sub)
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.command in commands.COMMANDS:
        return commands.main(args)
    if args.command == "bisect":
        from fuzz.triage import bisect  # JAX: kept out of `import fuzz.cli`
        return bisect.main(args)
    return run_command.main(args)


if __name__ == "__main__":
    sys.exit(main())
