"""Whole-partition failures, each with a message that says what and where (no Dagster here)."""


class EmptyPartitionError(Exception):
    """Nothing survived: there is no dataset to write, and the message says why."""


class DiskFullError(Exception):
    """The output file system filled up; whatever the stage was writing has been removed."""
