"""``python -m controller_manager`` is ``karmada-controller-manager`` (the process wiring lives in controllers.app)."""

import sys

from controllers.app import main

sys.exit(main())
