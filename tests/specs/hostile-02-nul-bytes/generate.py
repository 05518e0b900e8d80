"""A NUL byte in a string, in a comment and between statements (each is refused by TOML; the first is reported)."""


def files() -> dict[str, bytes]:
    return {"intents.toml": b'[project]\nname = "demo"\n\n[intent.build]\nrun = "make \x00all"\n# \x00\n\x00\n'}
