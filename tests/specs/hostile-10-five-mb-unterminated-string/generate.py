"""A 5 MB run line whose closing quote is missing."""


def files() -> dict[str, bytes]:
    return {"intents.toml": b'[intent.build]\nrun = "' + b"x" * 5_000_000 + b"\n"}
