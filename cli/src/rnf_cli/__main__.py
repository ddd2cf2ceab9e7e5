"""`python -m rnf_cli` is `rnf`."""

from rnf_cli.main import main

main()
