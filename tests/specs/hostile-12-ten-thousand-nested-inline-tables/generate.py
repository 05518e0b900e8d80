"""env = {a = {a = {... 10,000 levels, never closed."""


def files() -> dict[str, bytes]:
    return {"intents.toml": b'[intent.build]\nrun = "make"\nenv = ' + b"{a = " * 10_000 + b"\n"}
