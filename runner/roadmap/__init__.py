"""Roadmaps, a subsystem: a plan written in words made into intents. A markdown roadmap parsed into phases and
tasks (`markdown`), written into intents.toml (`intents`, `runner import`), its items ticked once their intents
completed (`sync`, `make --sync-roadmap`); a goal drafted into intents by the model (`draft`, `runner new`). It
imports the core; the core never imports it."""
