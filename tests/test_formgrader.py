"""The instructors' web interface: JupyterLab with nbgrader's extensions, on a copy of this course with
two submissions graded by `make autograde`, in headless Chromium.

A server (`jupyter lab`, 127.0.0.1, a free port, a random token, its own HOME and config folder) runs
in the course copy. The tests check that nbgrader's lab and server extensions are enabled (`jupyter
labextension list`, `jupyter server extension list`, the server's extension API), that the lab
shows the Nbgrader menu and opens formgrader from it, that formgrader lists the course's assignments
and the graded submissions with their scores, and that a submission's page shows each test cell's
score and failure message, as the student's feedback page does. Screenshots go to
_build/screenshots/formgrader-*.png. Skipped, with the reason, where Chromium is absent.

The course copy has one solution (alice, full marks) and one untouched release (bob, 0) of exercise 1:
grading them takes about 15 s. Where bubblewrap is missing they are graded with --unsafe-no-sandbox
(this test is about the web interface, not the sandbox).

One stand-in: formgrader's grading page loads MathJax 2 from cdnjs (nbgrader 0.9.6 writes that address
into its template), and its script stops before setting up its keyboard shortcuts when MathJax is
missing. This machine has no network, so the browser gets a minimal MathJax 2 object on that page (the
CDN's failed request is the one console error allowed there). The instructors' page on a term
(book/exercises/instructors-term.md) says what this means for a hub without internet access.
"""

from __future__ import annotations

import csv
import importlib.metadata
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from helpers import ROOT

pytestmark = pytest.mark.slow

ASSIGNMENT = "01-word2vec"
WRITTEN = "written_noise"  # its written answer, graded by hand in the last test
STUDENTS = {"alice": "solutions", "bob": "exercises"}  # whose notebook: the solution, the release
SCREENSHOTS = ROOT / "_build" / "screenshots"
START_TIMEOUT_S = 90
WAIT_S = 60  # the lab loads slowly on a machine busy with the rest of the test suite
ANSI = re.compile(r"\x1b\[[0-9;]*m")
CDN_MATHJAX = "https://cdnjs.cloudflare.com/ajax/libs/mathjax/"
# Defined before formgrader's grading page runs its scripts (Page.addScriptToEvaluateOnNewDocument).
MATHJAX_STUB = """
if (location.pathname.includes("/formgrader/submissions/")) {
  window.MathJax = {Hub: {Config() {}, Queue() {},
                          Startup: {signal: {Interest(f) { setTimeout(() => f("End"), 0); }}}}};
}
"""


def venv_tool(name: str) -> str:
    here = Path(sys.executable).with_name(name)
    return str(here if here.exists() else ROOT / ".venv" / "bin" / name)


def max_score(assignment: str, written: bool | None = None) -> float:
    """The points of the assignment's graded cells: all of them, or only the written answers (True), or only the
    tests (False)."""
    nb = nbformat.read(str(ROOT / "solutions" / assignment / f"{assignment}.ipynb"), as_version=4)
    return sum(
        c.metadata.get("nbgrader", {}).get("points", 0)
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("grade") and written in (None, c.cell_type == "markdown")
    )


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """A copy of the course with alice's and bob's submissions graded by `make autograde`."""
    root = tmp_path_factory.mktemp("course")
    shutil.copy(ROOT / "nbgrader_config.py", root)
    for folder in ("solutions", "exercises"):
        shutil.copytree(ROOT / folder, root / folder)
    for student, source in STUDENTS.items():
        folder = root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        shutil.copy(ROOT / source / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", folder)
    args = "" if shutil.which("bwrap") else "ARGS=--unsafe-no-sandbox"
    run = subprocess.run(
        ["make", "-s", "autograde", f"COURSE={root}", "JOBS=2", *filter(None, [args])],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    for student in STUDENTS:
        assert (root / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").exists()
        assert (root / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").exists()
    return root


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(course, tmp_path_factory):
    """`jupyter lab` in the course folder; yields (base URL, token, environment)."""
    home = tmp_path_factory.mktemp("instructor-home")
    config = home / ".jupyter"
    config.mkdir()
    # As a hub's /etc/jupyter/nbgrader_config.py would: the exchange, and which folder is the course.
    (config / "nbgrader_config.py").write_text(
        f"c = get_config()  # noqa\nc.Exchange.root = {str(home / 'exchange')!r}\n"
        f"c.CourseDirectory.root = {str(course)!r}\n",
        encoding="utf-8",
    )
    (home / "exchange").mkdir()
    # No "get notified about Jupyter news?" prompt over the lab (it would fetch them from the web).
    news = config / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}', encoding="utf-8")
    env = {
        **os.environ,
        "HOME": str(home),
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "IPYTHONDIR": str(home / ".ipython"),
    }
    env["PATH"] = f"{Path(venv_tool('jupyter')).parent}{os.pathsep}{env.get('PATH', '')}"
    port, token = free_port(), secrets.token_hex(16)
    cmd = [
        venv_tool("jupyter"),
        "lab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={course}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(home / "jupyter.log", "w", encoding="utf-8")  # noqa: SIM115 (closed below)
    server = subprocess.Popen(cmd, cwd=course, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            api(base, token, "/api/status")
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                log.close()
                pytest.fail("jupyter lab did not start:\n" + (home / "jupyter.log").read_text(encoding="utf-8")[-4000:])
            time.sleep(0.5)
    yield base, token, env
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    log.close()


def api(base: str, token: str, path: str):
    request = urllib.request.Request(base + path, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        body = reply.read().decode("utf-8")
    return json.loads(body) if body.lstrip().startswith(("{", "[")) else body


def wait_for(driver, script: str, what: str, timeout: float = WAIT_S):
    """Poll a JavaScript expression until it is truthy; return its value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(f"return ({script});")
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what} on {driver.current_url}")


def screenshot(driver, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / name
    assert driver.save_screenshot(str(path)) and path.stat().st_size > 10_000, path
    return path


def severe(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


@pytest.fixture(scope="module")
def signed_in(browser, lab):
    """The browser, signed in to the server by its token (a cookie), with the MathJax stand-in."""
    base, token, _ = lab
    browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": MATHJAX_STUB})
    browser.get(f"{base}/formgrader?token={token}")
    browser.get_log("browser")
    return browser


def test_nbgrader_extensions_are_enabled(lab):
    base, token, env = lab
    version = importlib.metadata.version("nbgrader")
    listed = subprocess.run(
        [venv_tool("jupyter"), "labextension", "list"], env=env, capture_output=True, text=True, timeout=120, check=True
    )
    text = ANSI.sub("", listed.stdout + listed.stderr)
    assert re.search(rf"@jupyter/nbgrader v{re.escape(version)} enabled OK", text), text
    server = subprocess.run(
        [venv_tool("jupyter"), "server", "extension", "list"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    text = ANSI.sub("", server.stdout + server.stderr)
    for extension in ("formgrader", "assignment_list", "course_list", "validate_assignment"):
        assert re.search(rf"nbgrader\.server_extensions\.{extension} enabled", text), text
    # The running server: its extension manager, and the page configuration it hands the lab.
    extensions = {e["name"]: e for e in api(base, token, "/lab/api/extensions?refresh=0")}
    nbgrader = next(e for name, e in extensions.items() if "nbgrader" in name)
    assert nbgrader["enabled"] and nbgrader["installed_version"] == version, nbgrader
    page = api(base, token, "/lab")
    config = json.loads(
        re.search(
            r'<script id="jupyter-config-data" type="application/json">'
            r"(.*?)</script>",
            page,
            re.S,
        )[1]
    )
    assert "@jupyter/nbgrader" in {e["name"] for e in config["federated_extensions"]}
    assert not any("nbgrader" in d for d in config.get("disabledExtensions", []))
    assignments = {a["name"]: a for a in api(base, token, "/formgrader/api/assignments")}
    assert assignments[ASSIGNMENT]["num_submissions"] == len(STUDENTS)


def test_lab_shows_the_nbgrader_menu_and_opens_formgrader(signed_in, lab):
    driver, (base, _, _) = signed_in, lab
    driver.set_window_size(1600, 1000)  # room for the file browser beside formgrader
    driver.get(f"{base}/lab")
    wait_for(
        driver,
        """[...document.querySelectorAll('.lm-MenuBar-itemLabel')]
                        .some(e => e.textContent === 'Nbgrader')""",
        "the Nbgrader menu",
    )
    activated = [
        e["message"] for e in driver.get_log("browser") if "nbgrader" in e["message"] and "activated" in e["message"]
    ]
    assert any("formgrader is activated" in m for m in activated), activated
    menu = driver.find_element("xpath", "//li[contains(@class, 'lm-MenuBar-item')][.//div[text()='Nbgrader']]")
    menu.click()
    items = wait_for(
        driver,
        """(() => {
        const items = [...document.querySelectorAll('.lm-Menu-itemLabel')].map(e => e.textContent);
        return items.length && items; })()""",
        "the Nbgrader menu's items",
    )
    assert "Formgrader" in items, items
    driver.find_element("xpath", "//li[contains(@class, 'lm-Menu-item')][.//div[text()='Formgrader']]").click()
    wait_for(
        driver, "[...document.querySelectorAll('iframe')].some(f => f.src.includes('formgrader'))", "formgrader's panel"
    )
    frame = driver.find_element("css selector", "iframe[src*='formgrader']")
    driver.switch_to.frame(frame)
    try:
        wait_for(
            driver,
            f"document.body && document.body.innerText.includes('{ASSIGNMENT}')",
            "the assignments in the formgrader panel",
        )
    finally:
        driver.switch_to.default_content()
    wait_for(
        driver,
        """[...document.querySelectorAll('.jp-DirListing-item')].some(
                 e => e.innerText.includes('gradebook.db') && e.getBoundingClientRect().height > 0)""",
        "the course's files in the file browser",
    )
    time.sleep(0.5)
    screenshot(driver, "formgrader-lab.png")
    driver.set_window_size(1280, 900)
    errors = [m for m in severe(driver) if "nbgrader" in m or "formgrader" in m]
    assert not errors, errors


def test_formgrader_lists_the_assignments(signed_in, lab):
    driver, (base, _, _) = signed_in, lab
    driver.get(f"{base}/formgrader/manage_assignments")
    expected = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())
    rows = wait_for(
        driver,
        f"""(() => {{
        const rows = [...document.querySelectorAll('#main-table tr')]
            .map(r => [...r.querySelectorAll('td')].map(td => td.innerText.trim()));
        return rows.length >= {len(expected)} && rows;
    }})()""",
        "the assignments table",
    )
    assert sorted(r[0] for r in rows) == expected, rows
    (word2vec,) = [r for r in rows if r[0] == ASSIGNMENT]
    assert str(len(STUDENTS)) in word2vec, f"{ASSIGNMENT} should count 2 submissions: {word2vec}"
    screenshot(driver, "formgrader-assignments.png")
    assert not severe(driver)


def test_formgrader_shows_each_submissions_score(signed_in, lab):
    driver, (base, _, _) = signed_in, lab
    driver.get(f"{base}/formgrader/manage_submissions/{ASSIGNMENT}")
    rows = wait_for(
        driver,
        """(() => {
        const rows = [...document.querySelectorAll('#main-table tr')]
            .map(r => [...r.querySelectorAll('td')].map(td => td.innerText.trim()));
        return rows.length >= 2 && rows;
    })()""",
        "the submissions table",
    )
    top, tests = max_score(ASSIGNMENT), max_score(ASSIGNMENT, written=False)
    assert top > tests, "the assignment has written answers"
    scores = {r[1]: r[4] for r in rows}  # Student ID -> Score
    # Every test passed for alice; her written answers wait for the instructor.
    assert scores == {"alice": f"{tests:g} / {top:g}", "bob": f"0 / {top:g}"}, rows
    assert all("needs manual grading" in r for r in rows), f"the written answers wait for the instructor: {rows}"
    screenshot(driver, "formgrader-submissions.png")
    assert not severe(driver)


# The grading page's cells that take a score. The autograder's score is the input's placeholder; its value is a
# manual score. A written answer has no autograder score: formgrader marks it as needing a manual grade.
SCORED_CELLS = """(() => {
    const cells = [...document.querySelectorAll('.nbgrader_cell')].filter(c => c.querySelector('input.score'));
    const manual = c => c.querySelector('input.score').classList.contains('needs_manual_grade');
    const ready = cells.every(c => manual(c) || c.querySelector('input.score').placeholder !== '');
    return ready && cells.length && cells.map(c => ({
        auto: c.querySelector('input.score').placeholder,
        manual: c.querySelector('input.score').value,
        needsManual: manual(c),
        text: (c.closest('.cell') || c).innerText}));
})()"""


def submitted_notebook(base: str, token: str, student: str) -> str:
    notebooks = api(base, token, f"/formgrader/api/submitted_notebooks/{ASSIGNMENT}/{ASSIGNMENT}")
    (found,) = [n["id"] for n in notebooks if n["student"] == student]
    return found


@pytest.mark.parametrize("student", sorted(STUDENTS))
def test_a_graded_submission_shows_its_scores_and_feedback(signed_in, lab, course, student):
    driver, (base, token, _) = signed_in, lab
    driver.get(f"{base}/formgrader/submissions/{submitted_notebook(base, token, student)}/")
    # Loaded, and done with its first scroll (formgrader's own, once MathJax has typeset).
    wait_for(driver, "window.formgrader && formgrader.loaded && MathJax.loaded", "formgrader's grading page")
    cells = wait_for(driver, SCORED_CELLS, "the scored cells")
    full = student == "alice"
    tests = max_score(ASSIGNMENT, written=False)
    written = [c for c in cells if c["needsManual"]]
    cells = [c for c in cells if not c["needsManual"]]
    assert sum(float(c["auto"]) for c in cells) == (tests if full else 0), cells
    assert all(c["manual"] == "" for c in cells + written), "no manual score was given"
    assert len(written) >= 1 and all(c["auto"] == "" for c in written), "written answers wait for a hand score"
    if not full:  # every test failed: the failure is on the page, as the student's feedback shows
        assert all("NotImplementedError" in c["text"] for c in cells), [c["text"][:200] for c in cells]
        driver.execute_script("""$("body, html").stop();  // formgrader's own scroll to the top
            document.querySelector('input.score').closest('.cell').scrollIntoView({block: 'start'});
            window.scrollBy(0, -60);""")
        time.sleep(0.5)
        screenshot(driver, "formgrader-submission.png")
    errors = [m for m in severe(driver) if CDN_MATHJAX not in m]
    assert not errors, errors
    # The student's own page (feedback/), as the lab serves it to the instructor.
    driver.get(f"{base}/files/feedback/{student}/{ASSIGNMENT}/{ASSIGNMENT}.html?token={token}")
    text = wait_for(driver, "document.body && document.body.innerText", "the feedback page")
    assert f"/ {tests:g}" in text and "hidden tests ran here" in text, text[:2000]
    assert f"your written answer: {WRITTEN}" in text and "graded by hand" in text, text[-2000:]
    if not full:
        assert "NotImplementedError" in text
        screenshot(driver, "formgrader-feedback.png")
    assert not severe(driver)


def test_the_graded_copy_shows_test_cells_as_the_grader_ran_them(course):
    """A test cell of the instructor's copy (what formgrader shows) carries the grader's verdict only, not the
    sandbox's run of its visible half (which has no course library: an ImportError, misleading there)."""
    for student in STUDENTS:
        nb = nbformat.read(str(course / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"), as_version=4)
        tests = [
            c
            for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")
        ]
        assert tests, "the graded copy keeps the test cells"
        for cell in tests:
            text = json.dumps(cell.get("outputs", []))
            assert "not available while grading" not in text, (student, cell.metadata["nbgrader"]["grade_id"])


def grades(course: Path) -> dict[str, dict]:
    with open(course / "grades.csv", encoding="utf-8") as stream:
        return {row["student"]: row for row in csv.DictReader(stream)}


def autograde(course: Path) -> str:
    args = "" if shutil.which("bwrap") else "ARGS=--unsafe-no-sandbox"
    run = subprocess.run(
        ["make", "-s", "autograde", f"COURSE={course}", "JOBS=2", *filter(None, [args])],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def test_a_written_answer_is_graded_by_hand_and_counted(signed_in, lab, course):
    """The instructor types a score into the written answer's box on formgrader's page; the next `make autograde`
    keeps it and counts it in grades.csv; a changed answer voids it. (Last in this file: it changes the grades.)"""
    driver, (base, token, _) = signed_in, lab
    top, tests, written = (max_score(ASSIGNMENT, w) for w in (None, False, True))
    before = grades(course)["alice"]
    assert (before["score"], before["max_score"], before["to_grade_by_hand"]) == (
        f"{tests:g}",
        f"{top:g}",
        f"{written:g}",
    ), before
    submission = submitted_notebook(base, token, "alice")
    driver.get(f"{base}/formgrader/submissions/{submission}/")
    wait_for(driver, "window.formgrader && formgrader.loaded && MathJax.loaded", "formgrader's grading page")
    cells = wait_for(driver, SCORED_CELLS, "the scored cells")
    (answer,) = [c for c in cells if c["needsManual"]]
    assert "100^0.75" in answer["text"], "formgrader shows the student's written answer"
    driver.execute_script("""const box = window.writtenBox = document.querySelector('input.score.needs_manual_grade');
        box.closest('.cell').scrollIntoView({block: 'center'});
        box.value = '2'; box.dispatchEvent(new Event('change', {bubbles: true}));""")
    given = wait_for(
        driver,
        f"""(async () => {{
        const grades = await (await fetch('{base}/formgrader/api/grades?submission_id={submission}')).json();
        const g = grades.find(g => g.name === '{WRITTEN}');
        return g && g.manual_score !== null && g.manual_score;
    }})()""",
        "the hand score saved in the gradebook",
    )
    assert given == 2, given
    driver.execute_script("""$("body, html").stop();  // formgrader's own scroll to the top, after MathJax
        window.writtenBox.closest('.cell').scrollIntoView({block: 'center'});""")
    time.sleep(0.5)
    screenshot(driver, "formgrader-written.png")
    assert not [m for m in severe(driver) if CDN_MATHJAX not in m]

    out = autograde(course)
    after = grades(course)["alice"]
    assert (after["score"], after["max_score"], after["to_grade_by_hand"]) == (f"{tests + 2:g}", f"{top:g}", "0"), (
        after,
        out,
    )

    # alice changes her answer and submits again: the score given to the old text no longer counts
    path = course / "submitted" / "alice" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == WRITTEN]
    cell.source = "A new answer, written after the first was graded."
    nbformat.write(nb, str(path))
    out = autograde(course)
    again = grades(course)["alice"]
    assert (again["score"], again["to_grade_by_hand"]) == (f"{tests:g}", f"{written:g}"), (again, out)
    assert "Written answers to grade by hand" in out, out
