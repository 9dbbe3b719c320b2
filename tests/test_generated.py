"""Files written by scripts/generate match their sources (kaos.api, the Agent CRD, the runtime's
API-key rule and approval-entry grammar): whoever changes a source runs the script, and this test says so when they forget."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_generated_files_are_current():
    checked = subprocess.run([sys.executable, str(ROOT / "scripts" / "generate"), "--check"],
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr
