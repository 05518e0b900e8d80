"""5 MB of good intents (150,000 of them) and a missing value on the very last line."""


def files() -> dict[str, bytes]:
    intents = "".join(f'[intent.i{i}]\nrun = "echo {i}"\n' for i in range(150_000))
    return {"intents.toml": (intents + "timeout =\n").encode()}
