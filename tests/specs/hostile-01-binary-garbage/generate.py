"""4 KB of random bytes (a fixed seed): what a binary file saved as intents.toml looks like."""

import random


def files() -> dict[str, bytes]:
    return {"intents.toml": random.Random(57).randbytes(4096)}
