"""``python -m word2bert_grader release|autograde|export|similarity``: the make targets' commands."""

import argparse
import json
import os
import sys
from pathlib import Path

from word2bert_grader import pipeline
from word2bert_grader.assignment import assignments, printable
from word2bert_grader.intake import course, lms
from word2bert_grader.outputs import exports, similarity


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m word2bert_grader", description=pipeline.__doc__)
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="course root holding solutions/ (default: .)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("release", help="regenerate exercises/ from solutions/")
    grade = commands.add_parser("autograde", help="grade everything under submitted/")
    for flag, kind, text in (
        ("--downloads", Path, "folder of LMS downloads (<student>_<assignment>.ipynb, zips)"),
        ("--roster", Path, "file of the student ids allowed (one per line, or CSV with id)"),
        ("--jobs", int, "submissions graded at once on this machine (default: CPU count)"),
        ("--scheduler", str, "grade on a running Dask cluster instead, e.g. tcp://host:8786"),
        ("--timeout", float, "per-cell time limit in s (default: the config's)"),
    ):
        grade.add_argument(flag, type=kind, help=text)
    grade.add_argument("--no-feedback", action="store_true", help="skip the HTML feedback")
    grade.add_argument("--feedback-for", nargs="+", metavar="STUDENT", help="write these students' feedback only")
    grade.add_argument("--lms", choices=("canvas", "moodle"), help="the format of --downloads and --roster")
    grade.add_argument("--students", nargs="+", metavar="STUDENT", help="regrade these students only")
    grade.add_argument("--assignments", nargs="+", metavar="NAME", help="regrade these assignments only")
    grade.add_argument("--unsafe-no-sandbox", action="store_true", help="run student code WITHOUT bubblewrap")
    out = commands.add_parser("export", help="grades.csv and feedback/ in an LMS's import formats, into exports/")
    out.add_argument("--lms", choices=("canvas", "moodle"), help="default: course.toml's [lms] name")
    out.add_argument("--roster", type=Path, help="the LMS's gradebook export (default: course.toml's)")
    similar = commands.add_parser("similarity", help="similar answers across the class and the solutions: reports/")
    similar.add_argument("--threshold", type=float, help="the score from which a pair is flagged, in [0, 1]")
    args = parser.parse_args(argv)
    os.environ["PATH"] = f"{sys.prefix}/bin{os.pathsep}{os.environ.get('PATH', '')}"  # nbgrader runs its alembic
    root = args.root.resolve()
    if args.command == "release":
        pipeline.release(root)
    elif args.command == "export":
        names = list(assignments(root))
        calendar = course.load(root, names).for_lms(args.lms)
        if calendar.lms.name is None:
            parser.error("export: say which LMS (LMS=canvas or LMS=moodle), or set [lms] name in course.toml")
        path = args.roster or calendar.lms.roster
        roster = lms.read_roster(path, calendar.lms.name, calendar.lms.id_column or "") if path else None
        lines = calendar.problems + (roster.problems if roster else [])
        lines += exports.export(root, calendar.lms.name, calendar, names, roster)
        print("\n".join(map(printable, lines)))  # the roster's names are the students' text
    elif args.command == "similarity":
        config = similarity.Settings(**({"threshold": args.threshold} if args.threshold is not None else {}))
        report = similarity.run(root, config)
        similarity.write(report, root / "reports")
        print("\n".join(map(printable, report.problems)))
        print(f"{len(report.pairs)} pair(s) flagged of {report.answers} answers ({report.compared} compared): ", end="")
        print("reports/similarity.html, reports/similarity.csv")
    else:
        feedback = False if args.no_feedback else set(args.feedback_for) if args.feedback_for else True
        given = ("downloads", "jobs", "timeout", "roster", "scheduler", "lms", "students", "assignments")
        options = {k: getattr(args, k) for k in given}
        request = pipeline.AutogradeRequest(root, feedback=feedback, unsafe=args.unsafe_no_sandbox, **options)
        results = pipeline.autograde(request)
        failed, tampered = sum(bool(r.failure) for r in results), sum(bool(r.tampering) for r in results)
        counts = {"submissions": len(results), "failed": failed, "tampering_suspected": tampered}
        print(json.dumps({**counts, "sandbox": not args.unsafe_no_sandbox}))


if __name__ == "__main__":
    main()
