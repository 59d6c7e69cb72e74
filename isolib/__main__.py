"""Command line: ``python -m isolib data fetch|verify`` and ``python -m isolib reproduce``."""

from isolib.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
