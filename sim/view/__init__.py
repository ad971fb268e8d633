"""Pictures of battles: board pictures and plots (:mod:`.render`), GIF replays from a stored event log
(:mod:`.replay`) and the interactive Solara app (:mod:`.app`, its page :mod:`.board`)."""
