"""`python -m partita.cli ...`: the same as `partita ...`."""

import sys

from partita.cli import main

sys.exit(main())
