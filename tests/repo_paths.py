"""The repository's folders, for the tests that read or run its files (docs, examples,
benchmarks), wherever in tests/ they live."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the repository
