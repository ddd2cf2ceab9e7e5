"""The `rnf` command line: a thin group whose subcommands live in the component packages."""
