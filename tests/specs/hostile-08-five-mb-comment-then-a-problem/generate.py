"""A 5 MB comment line, then an intent with an unknown dependency: the line numbers still hold."""


def files() -> dict[str, bytes]:
    return {"intents.toml": b"# " + b"x" * 5_000_000 + b'\n[intent.build]\nrun = "make"\ndeps = ["lnit"]\n'}
