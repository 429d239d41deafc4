"""``python -m descheduler`` is ``karmada-descheduler``."""

import sys

from .app import main

sys.exit(main())
