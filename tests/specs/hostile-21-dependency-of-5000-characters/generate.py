"""A dependency and a default naming an intent of 5,000 letters that does not exist."""


def files() -> dict[str, bytes]:
    name = b"b" * 5000
    return {
        "intents.toml": b'[project]\nname = "demo"\ndefault = "' + name + b'"\n\n[intent.build]\nrun = "make"\n'
        b'deps = ["' + name + b'"]\n'
    }
