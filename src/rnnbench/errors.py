"""Errors the command line turns into one line on stderr and exit code 2."""


class UsageError(ValueError):
    """Bad input from the user: an unknown name, an invalid size, a missing file."""


def check_choice(field: str, value, choices) -> None:
    """Raise UsageError unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise UsageError(f"unknown {field} {value!r}; choose from {', '.join(choices)}")


def check_positive_int(field: str, value) -> None:
    """Raise UsageError unless ``value`` is an int (not a bool) of at least 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"{field} must be a positive integer, got {value!r}")
