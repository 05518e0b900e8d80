"""deps = [[[[... 10,000 levels, closed: past the TOML reader's nesting limit (it would recurse until it crashed)."""


def files() -> dict[str, bytes]:
    deep = b"[" * 10_000 + b"]" * 10_000
    return {"intents.toml": b'[project]\nname = "demo"\n\n[intent.build]\nrun = "make"\ndeps = ' + deep + b"\n"}
