"""What goes out: the gradebook, feedback pages, grades.csv and the summary, exports to an LMS, similarity."""
