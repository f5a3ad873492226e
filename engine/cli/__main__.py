"""`python -m engine.cli ...`: the same as `partita ...`."""

import sys

from engine.cli import main

sys.exit(main())
