"""Errors the command line turns into one line on stderr and exit code 2."""


class UsageError(ValueError):
    """Bad input from the user: an unknown name, an invalid size, a missing file."""
