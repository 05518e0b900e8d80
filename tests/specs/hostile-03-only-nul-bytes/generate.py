"""A file of nothing but NUL bytes (a truncated or pre-allocated file)."""


def files() -> dict[str, bytes]:
    return {"intents.toml": b"\x00" * 4096}
