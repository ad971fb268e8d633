"""Doctrine experiments: experiment files and their designs (:mod:`.design`, :mod:`.samplers`), the batch that plays
them (:mod:`.batch`), the results folder (:mod:`.store`), and what the results say (:mod:`.report`,
:mod:`.analysis`)."""
