"""`python -m runner`: the same entry point as the `runner` console script."""

from .entry import main

if __name__ == "__main__":
    main()
