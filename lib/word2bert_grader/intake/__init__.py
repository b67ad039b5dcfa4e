"""What comes in: downloads from a learning platform, rosters, course.toml, due dates, the submissions on disk."""
