"""``python -m rebalancectl`` runs ``karmada-rebalance``."""

import sys

from .cli import main

sys.exit(main())
