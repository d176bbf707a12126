"""``python -m snsim ...`` is the ``snsim`` command."""
import sys

from snsim.cli import main

sys.exit(main())
