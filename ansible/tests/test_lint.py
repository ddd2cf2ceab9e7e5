"""ansible/ passes yamllint and ansible-lint (production profile), both run for real on the whole folder.

ansible-lint decrypts the example Vault with its documented example password, so that it checks the variables in
it too, and runs offline (`.ansible-lint`): every collection it needs is installed from PyPI with the `ansible`
package of the dev group.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ANSIBLE_DIR = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
EXAMPLE_VAULT_PASSWORD = "rnf-example-vault"


def _run(argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    password = tmp_path / "vault-password"
    password.write_text(EXAMPLE_VAULT_PASSWORD + "\n")
    env = {
        **os.environ,
        "PATH": f"{BIN}:{os.environ.get('PATH', '')}",
        "ANSIBLE_CONFIG": str(ANSIBLE_DIR / "ansible.cfg"),
        "ANSIBLE_VAULT_PASSWORD_FILE": str(password),
        "ANSIBLE_HOME": str(tmp_path / "ansible-home"),
        "NO_COLOR": "1",
    }
    return subprocess.run(argv, cwd=ANSIBLE_DIR, env=env, capture_output=True, text=True, timeout=600)


def test_yamllint_finds_nothing(tmp_path: Path) -> None:
    result = _run([str(BIN / "yamllint"), "--strict", "."], tmp_path)
    assert result.returncode == 0, f"yamllint:\n{result.stdout}{result.stderr}"


@pytest.mark.timeout(600)
def test_ansible_lint_passes_the_production_profile(tmp_path: Path) -> None:
    result = _run([str(BIN / "ansible-lint"), "--nocolor"], tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"ansible-lint:\n{output}"
    assert "Profile 'production' was required, and it passed" in output, output
