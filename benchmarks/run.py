"""Run every benchmark in this folder, one after the other, each in its own process (``make benchmarks``).

Each script prints its own table; README.md holds the measured figures and how they were taken.
"""

import subprocess
import sys
from pathlib import Path

here = Path(__file__).parent
scripts = sorted(
    p
    for p in here.glob("*.py")  # scripts, not the modules they import
    if p.name != "run.py" and '__name__ == "__main__"' in p.read_text(encoding="utf-8")
)
failed = []
for script in scripts:
    print(f"\n=== {script.name} ===", flush=True)
    if subprocess.run([sys.executable, str(script)]).returncode != 0:
        failed.append(script.name)
if failed:
    sys.exit(f"benchmarks failed: {', '.join(failed)}")
