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


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be >= 1")
    return value


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="discharge-fuzz", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="fuzz: valid and invalid programs through every path and oracle")
    run.add_argument("--max-examples", type=_positive, default=200,
                     help="Hypothesis examples per strategy (default 200)")
    run.add_argument("--seed", type=int, default=None, help="Hypothesis seed (default: random)")
    run.add_argument("--strategies", default="valid,invalid",
                     help="comma-separated: valid, invalid (default both)")
    run.add_argument("--include-known", action="store_true",
                     help="raise and shrink known findings too, instead of counting them")
    from fuzz import triage  # replay / minimize / report
    triage.add_commands(sub)
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    from fuzz import triage
    if args.command in triage.COMMANDS:
        return triage.main(args)
    chosen = [s.strip() for s in args.strategies.split(",") if s.strip()]
    if not chosen or (bad := [s for s in chosen if s not in ("valid", "invalid")]):
        print(f"discharge-fuzz: error: --strategies must name valid and/or invalid, "
              f"got {args.strategies!r}", file=sys.stderr)
        return EXIT_ERROR
    from fuzz import compat
    try:
        compat.check_version()
    except compat.UnsupportedJax as e:
        print(f"discharge-fuzz: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    from fuzz import summary
    from fuzz.campaign import run_campaign
    import strategies
    make = {"valid": strategies.programs, "invalid": strategies.invalid_programs}
    results = {}
    for name in chosen:
        print(f"fuzzing {name} programs ({args.max_examples} examples)...", flush=True)
        results[name] = run_campaign(make[name](), max_examples=args.max_examples,
                                     seed=args.seed, include_known=args.include_known)
    print(summary.text(results))
    if any(r.errors for r in results.values()):
        return EXIT_ERROR
    return EXIT_FOUND if any(r.failures for r in results.values()) else EXIT_CLEAN


if __name__ == "__main__":
    sys.exit(main())
