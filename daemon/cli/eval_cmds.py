"""The command line: eval (the maintenance benchmark; logic in runtime/evaluate.py)."""

from __future__ import annotations

import argparse
import sys

from .common import AddParser, command, emit_json, setup_logging


def add_parsers(add: AddParser) -> None:
    p = add("eval", "the maintenance benchmark: a bundled multi-source story told in a scratch vault through the "
                    "configured model (the built-in scripted server when [llm] sets none), then a scorecard",
            vault=False)
    p.add_argument("--json", action="store_true", help="machine-readable scorecard (for CI)")
    p.add_argument("--scripted", action="store_true",
                   help="use the built-in scripted server even when [llm] sets a model")
    p.add_argument("--min-score", type=float, metavar="PERCENT",
                   help="exit 1 when the score is below this (default: 100 on the scripted server, "
                        "no threshold with a real model)")


@command("eval")
def cmd_eval(args: argparse.Namespace) -> int:
    from ..core.config import load_config
    from ..runtime.evaluate import run_eval

    setup_logging(args.verbose)
    config = load_config(None)  # the user's config and WIKIWRIGHT_* (the scratch vault has none of its own)
    scripted = args.scripted or not config.llm.enabled
    card = run_eval(config, use_configured_model=not scripted)
    if args.json:
        emit_json(card.to_json())
    else:
        print(card.render())
    waiting = [r for r in card.sources if r.state == "pending"]
    if waiting:  # the engine never answered (unreachable, no key): a failure, whatever the threshold
        print(f"wikiwright: the model did not answer for {len(waiting)} of {len(card.sources)} sources: "
              f"{waiting[0].reason}", file=sys.stderr)
        return 1
    threshold = args.min_score if args.min_score is not None else (100.0 if scripted else None)
    return 1 if threshold is not None and card.score < threshold - 1e-9 else 0
