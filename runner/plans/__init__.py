"""Plans, a subsystem: markdown roadmaps read into intents (`roadmap`), written into intents.toml (`intents`), and
their items ticked once the intents completed (`sync`); the versions of agent intents' applied changes
(`versions`: history, show, improve's prompt, rollback). It imports the core; the core never imports it."""
