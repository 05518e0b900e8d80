"""`python -m runner`: the same entry point as the `runner` console script."""

from .entry import console

if __name__ == "__main__":
    console()
