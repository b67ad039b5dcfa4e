"""``python -m word2bert_grader release|autograde``: see :mod:`word2bert_grader.pipeline`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from word2bert_grader import pipeline


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m word2bert_grader",
        description=pipeline.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=Path.cwd(),
        help="course root holding nbgrader_config.py and solutions/ (default: .)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("release", help="regenerate exercises/ from solutions/")
    grade = commands.add_parser("autograde", help="grade everything under submitted/")
    grade.add_argument("--downloads", type=Path, help="folder of LMS downloads (<student>_<assignment>.ipynb, zips)")
    grade.add_argument("--roster", type=Path, help="file of the student ids allowed (one per line, or CSV with id)")
    grade.add_argument("--jobs", type=int, help="submissions graded at once on this machine (default: CPU count)")
    grade.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="grade on a running Dask cluster instead, e.g. tcp://host:8786 (see the instructors' page)",
    )
    grade.add_argument("--timeout", type=float, help="per-cell time limit in s (default: the config's)")
    grade.add_argument("--no-feedback", action="store_true", help="skip the HTML feedback")
    grade.add_argument(
        "--feedback-for", nargs="+", metavar="STUDENT", help="write the HTML feedback of these students only"
    )
    grade.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="run student code WITHOUT bubblewrap (no confinement; see the instructors' page)",
    )
    args = parser.parse_args(argv)
    if args.command == "release":
        pipeline.release(args.root.resolve())
        return
    feedback = False if args.no_feedback else set(args.feedback_for) if args.feedback_for else True
    results = pipeline.autograde(
        args.root,
        args.downloads,
        args.jobs,
        args.timeout,
        feedback,
        args.roster,
        args.unsafe_no_sandbox,
        args.scheduler,
    )
    print(
        json.dumps(
            {
                "submissions": len(results),
                "failed": sum(bool(r["failed"]) for r in results),
                "tampering_suspected": sum(bool(r["tampering"]) for r in results),
                "sandbox": not args.unsafe_no_sandbox,
            }
        )
    )


if __name__ == "__main__":
    main()
