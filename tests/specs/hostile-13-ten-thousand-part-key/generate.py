"""A table header of 10,000 dotted parts: [intent.a.b.b.b...]."""


def files() -> dict[str, bytes]:
    return {"intents.toml": b"[intent.a" + b".b" * 10_000 + b']\nrun = "make"\n'}
