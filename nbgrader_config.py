"""nbgrader configuration of the word2bert course.

Layout (nbgrader's ``{nbgrader_step}/{student_id}/{assignment_id}``, student "." for the first two):
``solutions/<assignment>/<assignment>.ipynb`` are the source notebooks (full solutions, hidden tests),
``exercises/<assignment>/`` the student release (committed), ``submitted/<student>/<assignment>/`` the
submissions, ``autograded/`` and ``feedback/`` what grading produces, ``gradebook.db`` the record.

nbgrader releases the exercises, checks them in the student's kernel (``nbgrader validate``) and keeps
the gradebook (``nbgrader export``, formgrader). Autograding is the instructors' package
``word2bert_grader`` (``make autograde``): it runs each submission's code in a bubblewrap sandbox and
the tests in its own process, so that student code cannot change a score. Its settings are the
``SandboxGrader`` ones below.
"""

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)

c.CourseDirectory.course_id = "word2bert"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"

# Per-cell time limit in seconds, for `nbgrader validate` and for the grader. Our test cells finish in
# a few seconds on a laptop CPU; a cell that runs out of time scores its own tests 0, the rest is graded.
c.Execute.timeout = 20
c.Execute.interrupt_on_timeout = True

# Cells that train a model get longer, by grade id: exercise 1 trains skip-gram twice, once with the
# student's pieces (3 s of CPU time with a vectorised loss, about 30 s with a correct loss that loops over
# the batch in Python, several times that on a loaded machine). Exercise 5 fine-tunes BERT for about 5 s on a
# laptop CPU, many times that on a loaded grading machine.
# Exercise 3 runs the trained GPT with the student's attention (about 1 s each on a laptop CPU, with a
# call into the sandbox per layer). Exercise 4 runs 40 BERT pre-training steps on the student's batches
# (10-20 s of CPU time, 35-90 s on a 2-core machine under heavy load).
# Exercise 2 trains the student's ScalarMix for the sense probe on ELMo's layers (about 4 s of CPU
# time, 62 s on a 2-core machine under load 14).
c.SandboxGrader.cell_timeouts = {
    "test_skipgram_training_purity": 240,
    "test_ClassificationHead_fine_tuning": 120,
    "test_multi_head_causal_attention_checkpoint": 60,
    "test_gpt_writes_samples": 60,
    "test_pretraining_run": 300,
    "test_ScalarMix_sense_probe": 240,
}
# What one submission's sandbox may use (see word2bert_grader.sandbox.Limits).
c.SandboxGrader.memory_mb = 2048
c.SandboxGrader.cpus = 1  # a CPU quota where the cgroup's cpu controller can be used: no starving a classmate
c.SandboxGrader.processes = 128
c.SandboxGrader.cpu_seconds = 900
c.SandboxGrader.file_mb = 64
c.SandboxGrader.scratch_mb = 256
# What the grader's own process may allocate while it tests one submission (its data, a soft RLIMIT_DATA): the
# tests compute on the student's results, and a result shaped to broadcast into gigabytes then fails its test
# instead of taking the process, and its pool's other submissions, down. Honest work needs about 0.5 GB; 0 lifts it.
c.SandboxGrader.grader_mb = 2048
# Time budgets of a submission: its own cells beyond the answers together, and replays after its sandbox restarts.
c.SandboxGrader.student_seconds = 120
c.SandboxGrader.replay_seconds = 240
