"""``tanksim generate KIND --ruleset R --size N --tanks K [--terrain ...] --seed S -o FILE``: write a validated
scenario drawn by one of the generators of :mod:`sim.generate` (same arguments, same bytes)."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from sim.cli import argtypes
from sim.generate import KINDS, PROFILES, GeneratorError, generate_text


def _shares(text: str) -> dict[str, float]:
    out = {}
    for part in text.split(","):
        if not part.strip():
            continue
        k, sep, v = part.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"--terrain {text!r}: expected NAME=SHARE[,NAME=SHARE...]")
        if k.strip() in out:
            raise argparse.ArgumentTypeError(f"--terrain {text!r}: {k.strip()!r} given twice; expected each terrain "
                                             f"once")
        try:
            out[k.strip()] = float(v)
        except ValueError:
            raise argparse.ArgumentTypeError(f"--terrain {part!r}: {v!r} is not a number") from None
    return out


#: The path prefix of a generator parameter in :class:`GeneratorError` lines (each parameter is an option).
_PARAMS = "generator.params."


def _ids(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    """``tanksim generate KIND [--ruleset R] [--size N] [--tanks K] [--seed S] [--terrain NAME=SHARE,...]
    [--density D] [--turns T] [--attacker IDS] [--defender IDS] [--name NAME] [-o FILE]``: write a validated
    scenario (``-o -`` or no ``-o``: print it).  Only ``KIND`` is required; every option has a default (shown by
    ``--help``).  Exit 0, or 2 for bad parameters."""
    ap = argparse.ArgumentParser(prog="tanksim generate", description="Write a scenario: " + ", ".join(KINDS) + ".")
    ap.add_argument("kind", choices=KINDS, metavar="KIND", help=f"what to generate: {', '.join(KINDS)}")
    ap.add_argument("--ruleset", default="panzer_squadron", metavar="R",
                    help=f"rule set: {', '.join(PROFILES)} (default panzer_squadron)")
    ap.add_argument("--size", type=int, default=25, metavar="N", help="board side in hexes, N x N (default 25)")
    ap.add_argument("--tanks", type=int, default=5, metavar="K", help="tanks per side (default 5)")
    ap.add_argument("--seed", type=argtypes.seed, default=0, metavar="S",
                    help="generator seed: the same arguments give the same file (default 0)")
    ap.add_argument("--terrain", type=_shares, metavar="NAME=SHARE,...",
                    help="share of the board each terrain covers (default: the kind's own scattering)")
    ap.add_argument("--density", type=float, metavar="D",
                    help="random kind: share of the board covered (default 0.25)")
    ap.add_argument("--turns", type=int, metavar="T", help="turn limit (default 0.6 x size, at least 8)")
    ap.add_argument("--attacker", type=_ids, metavar="IDS",
                    help="comma list of catalog vehicle ids cycled over the first side's tanks "
                         "(default: the rule set profile's)")
    ap.add_argument("--defender", type=_ids, metavar="IDS",
                    help="comma list of catalog vehicle ids cycled over the second side's tanks "
                         "(default: the rule set profile's)")
    ap.add_argument("--name", metavar="NAME", help="scenario name (default KIND_R_NxN_KvK_seedS)")
    ap.add_argument("-o", "--out", type=argtypes.output_file(), metavar="FILE",
                    help="file to write (default, or -: print the scenario)")
    args = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    params = {k: getattr(args, k) for k in ("ruleset", "size", "tanks", "seed", "terrain", "density", "turns",
                                            "attacker", "defender", "name") if getattr(args, k) is not None}
    try:
        text = generate_text(args.kind, params)
    except GeneratorError as exc:
        # a parameter's problem names its option (``--size: ...``), as the user typed it
        print("\n".join(f"tanksim generate: {'--' + e.removeprefix(_PARAMS) if e.startswith(_PARAMS) else e}"
                        for e in exc.errors), file=sys.stderr)
        return 2
    if args.out in (None, "-"):
        try:
            sys.stdout.write(text)
        except BrokenPipeError:
            return 0
        return 0
    try:
        with open(args.out, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
    except OSError as exc:
        print(f"tanksim generate: {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    from sim.cli.main import scenario_line
    from sim.scenario import parse_yaml, validate

    print(f"wrote {args.out}: {scenario_line(validate(parse_yaml(text, args.out), args.out))}")
    return 0
