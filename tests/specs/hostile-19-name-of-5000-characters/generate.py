"""An intent named with 5,000 letters: each of its files under .runner/ would exceed NAME_MAX (255)."""


def files() -> dict[str, bytes]:
    name = b"a" * 5000
    return {"intents.toml": b'[project]\nname = "demo"\n\n[intent.' + name + b']\nrun = "echo hi"\n'}
