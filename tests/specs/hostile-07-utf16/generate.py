"""A valid spec saved as UTF-16 (with its byte order mark), as some Windows editors save it."""


def files() -> dict[str, bytes]:
    return {"intents.toml": '[project]\nname = "demo"\n\n[intent.build]\nrun = "make"\n'.encode("utf-16")}
