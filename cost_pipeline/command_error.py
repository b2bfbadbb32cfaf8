"""The one error a ``cost-pipeline`` subcommand raises to refuse: a one-line message and the exit code the CLI ends
with (docs/operations.md lists them). The CLI prints the message on stderr, never a traceback."""


class CommandError(ValueError):
    """A command that cannot do what it was asked; the message is one line, ``exit_code`` the CLI's."""

    default_exit_code = 1

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.exit_code = self.default_exit_code if exit_code is None else exit_code
