"""[[[ repeated 10,000 times: a header that never starts a name."""


def files() -> dict[str, bytes]:
    return {"intents.toml": b"[[[" * 10_000}
