"""Plans: what a team does with its intents over time (versions of agent changes, rollback), built on the core."""
