"""``python -m sim.cli ARGS...`` is ``tanksim ARGS...``."""
import sys

from sim.cli.main import main

sys.exit(main())
