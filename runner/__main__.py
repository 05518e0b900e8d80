"""`python -m runner`: the same entry point as the `runner` console script."""

try:
    from .entry import console
except KeyboardInterrupt:  # Ctrl-C while the entry point loads: what console() says of one a moment later
    import os

    os.write(2, b"runner: interrupted\n")
    os._exit(130)  # errors.EXIT_INTERRUPTED: errors.py costs a start-up its typing import

if __name__ == "__main__":
    console()
