"""`make lint`: the GitHub workflow (.github/workflows/book.yml) runs the commands of the local CI.

GitHub cannot be run here, so this pins what can drift: the build job sets up with `make setup`, tests with
`bash .ci/run` (the local CI, which runs `make lint` and `make test`, the README's test command) and builds with
`make book` and `make dist`, in that order; the lint job runs `make lint` with actionlint required; the site
uploaded to Pages is `_build/html`, deployed on pushes to main only with the Pages permissions; the caches are the
venv (keyed on the files that pin it and on Python's version) and the jupyter-cache folder of _config.yml; every
job runs on the Python of runtime.txt. (`make lint` also checks the workflows against SchemaStore's schema and,
where it is installed, with actionlint.)

    python tools/check_workflow.py     # prints what is wrong and exits 1, or exits 0
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / ".github" / "workflows" / "book.yml"
LOCAL = ["make setup", "bash .ci/run", "make book", "make dist"]


def runs(job: dict) -> list[str]:
    """The shell commands of a job's steps, in order, stripped."""
    return [step["run"].strip() for step in job["steps"] if "run" in step]


def steps_using(job: dict, action: str) -> list[dict]:
    return [s for s in job["steps"] if s.get("uses", "").split("@")[0] == action]


def problems(workflow: dict) -> list[str]:
    """What is wrong with the workflow, in words; empty when nothing is."""
    found = []
    build, lint, deploy = (workflow["jobs"][name] for name in ("build", "lint", "deploy"))

    commands = runs(build)
    missing = [c for c in LOCAL if c not in commands]
    if missing:
        found.append(f"the build job must run {missing} each as its own step: {commands}")
    else:
        # Before `make setup` only set-up (cache bookkeeping, the CPU torch); after it exactly the local commands.
        before = commands[: commands.index("make setup")]
        if any("make " in c or "pytest" in c for c in before):
            found.append(f"the build job runs make or pytest before `make setup`: {before}")
        if commands[commands.index("make setup") :] != LOCAL:
            found.append(f"after set-up, the build job must run exactly {LOCAL}: {commands}")

    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for command in ("make lint", "make test"):
        if not re.search(rf"^{command}\b", ci, re.M):
            found.append(f".ci/run must run `{command}`")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("setup", "book", "dist", "test", "lint"):
        if not re.search(rf"^{target}:", makefile, re.M):
            found.append(f"Makefile has no `{target}` target")

    if not runs(lint) or runs(lint)[-1] != "make lint":
        found.append(f"the lint job must end with `make lint`: {runs(lint)}")
    elif not any(
        s.get("run", "").strip() == "make lint" and s.get("env", {}).get("REQUIRE_ACTIONLINT") == "1"
        for s in lint["steps"]
    ):
        found.append("the lint job's `make lint` must set REQUIRE_ACTIONLINT: '1'")

    on = workflow.get("on", workflow.get(True))  # PyYAML reads the key `on` as True (YAML 1.1)
    if on["push"]["branches"] != ["main"]:
        found.append(f"pushes to main only, not {on['push']['branches']}")
    main_only = "github.event_name == 'push' && github.ref == 'refs/heads/main'"
    uploads = steps_using(build, "actions/upload-pages-artifact")
    if len(uploads) != 1 or uploads[0]["with"]["path"] != "_build/html" or uploads[0].get("if") != main_only:
        found.append(f"one upload-pages-artifact step, of _build/html, if {main_only}")
    if deploy.get("if") != main_only or set(deploy.get("needs", [])) != {"lint", "build"}:
        found.append(f"deploy runs if {main_only}, after lint and build")
    if deploy.get("permissions") != {"pages": "write", "id-token": "write"}:
        found.append(f"deploy needs pages: write and id-token: write, not {deploy.get('permissions')}")
    if deploy.get("environment", {}).get("name") != "github-pages":
        found.append("deploy's environment must be github-pages")
    if [s.get("id") for s in steps_using(deploy, "actions/deploy-pages")] != ["deployment"]:
        found.append("deploy has one actions/deploy-pages step, with the id `deployment`")
    if workflow.get("permissions") != {"contents": "read"}:
        found.append("only deploy gets more than read access")
    if "group" not in workflow.get("concurrency", {}):
        found.append("the workflow needs a concurrency group")

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    python = (ROOT / "runtime.txt").read_text(encoding="utf-8").strip().removeprefix("python-")
    for name, job in (("lint", lint), ("build", build)):
        caches = {s["with"]["path"]: s for s in job["steps"] if s.get("uses", "").startswith("actions/cache@")}
        key = caches[".venv"]["with"]["key"] if ".venv" in caches else ""
        for pinned in ("constraints.txt", "pyproject.toml", "lib/word2bert_grader/pyproject.toml"):
            if f"'{pinned}'" not in key:
                found.append(f"{name}: the venv's cache key must hash {pinned}")
        if "steps.python.outputs.version" not in key:
            found.append(f"{name}: the venv's cache key must hold Python's version")
        if name == "build" and config["execute"]["cache"] not in caches:
            found.append(f"build must cache the jupyter-cache folder of _config.yml, {config['execute']['cache']}")
        image = job["container"]["image"]
        if not image.startswith(f"python:{python}-"):
            found.append(f"{name} runs on {image}, not the Python of runtime.txt ({python})")
    if config["execute"]["execute_notebooks"] != "cache":
        found.append("_config.yml must execute notebooks through the cache (execute_notebooks: cache)")
    return found


def main() -> int:
    found = problems(yaml.safe_load(BOOK.read_text(encoding="utf-8")))
    for problem in found:
        print(f"{BOOK.relative_to(ROOT)}: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
