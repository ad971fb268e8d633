"""AI-vs-AI tournaments: tournament files, schedules and leaderboards (:mod:`.tournament`), ratings with intervals
(:mod:`.ratings`), sequential tests (:mod:`.sprt`) and the meta-game (:mod:`.metagame`)."""
