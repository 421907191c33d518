"""``python -m convcache ARGS`` is ``convcache ARGS``."""

import sys

from ._cli import main

sys.exit(main())
