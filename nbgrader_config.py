"""nbgrader configuration of the word2bert course.

Layout (nbgrader's ``{nbgrader_step}/{student_id}/{assignment_id}``, student "." for the first two):
``solutions/<assignment>/<assignment>.ipynb`` are the source notebooks (full solutions, hidden tests),
``exercises/<assignment>/`` the student release (committed), ``submitted/<student>/<assignment>/`` the
submissions, ``autograded/`` and ``feedback/`` what grading produces. Use the one command
``python -m word2bert.grading release|autograde`` (``make release`` / ``make autograde``): it runs nbgrader
with this file, grades in parallel and survives broken submissions.
"""

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)

c.CourseDirectory.course_id = "word2bert"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"

# Per-cell time limit in seconds. nbgrader's 30 s default is too long for a student's infinite loop
# (every test cell calling it would wait that long); our test cells finish in a few seconds on a
# laptop CPU. A cell that runs out of time is interrupted and the rest of the notebook still runs.
c.Execute.timeout = 20
# Cells that train a model get longer, by grade id (word2bert.grading.Execute): exercise 5 fine-tunes
# BERT for about 5 s on a laptop CPU, many times that on a loaded grading machine.
c.Execute.cell_timeouts = {"test_ClassificationHead_fine_tuning": 120}
c.Execute.interrupt_on_timeout = True
c.Execute.execute_retries = 0

# Test cells a student deleted come back from the source notebook (edited ones are overwritten anyway).
c.OverwriteCells.add_missing_cells = True

# Our Execute adds per-cell time limits; nbgrader limits output lines, our LimitOutput also
# characters (one huge line).
c.Autograde.autograde_preprocessors = [
    "word2bert.grading.Execute",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "word2bert.grading.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
c.LimitOutput.max_lines = 200
c.LimitOutput.max_chars = 20_000

# Feedback shows which tests failed and the assert's message, never the source of hidden tests.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "word2bert.grading.HideHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]

# Downloads from a learning-management system, `nbgrader zip_collect` style: files (or zips of files)
# named <student>_<notebook>.ipynb or <student>_attempt_<timestamp>_<notebook>.ipynb.
c.FileNameCollectorPlugin.named_regexp = (
    r"^(?:.*/)?(?P<student_id>[A-Za-z0-9.\-]+)_(?:attempt_(?P<timestamp>[0-9\-]+)_)?"
    r"(?P<file_id>[A-Za-z0-9\-]+\.ipynb)$"
)
# A download is collected only into the assignment whose notebook it names.
c.ZipCollectApp.strict = True
