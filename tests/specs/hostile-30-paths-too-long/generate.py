"""An input whose one name is 1,000 bytes (a file name holds 255) and an output path of 5,000 bytes made of short
names (a path holds 4,096): both were 'File name too long', exit 4."""


def files() -> dict[str, bytes]:
    name, path = b"x" * 1000, b"d/" * 2499 + b"o"
    return {
        "intents.toml": b'[project]\nname = "demo"\n\n[intent.build]\nrun = "make"\n'
        b'inputs = ["src/' + name + b'.c"]\noutputs = ["' + path + b'"]\n'
    }
