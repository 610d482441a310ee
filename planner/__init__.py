"""planner: an optimization-based GPU procurement planner (see ../README.md)."""

__version__ = "0.1.0"
