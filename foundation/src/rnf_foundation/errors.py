"""The error type for problems the user can fix: printed as one line, never as a traceback."""

import click


class UserError(click.ClickException):
    """Bad input or environment: a scenario field, a missing trace, a busy port. The message names the problem."""

    exit_code = 2
