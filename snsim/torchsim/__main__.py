"""``python -m snsim.torchsim ARGS`` runs ``snsim ARGS`` (the plugin commands included).

``python -m snsim.cli`` runs ``snsim.cli`` as ``__main__``, a second copy of the module whose
command registry the plugins never see; this entry point uses the canonical one.
"""
import sys

from snsim.cli import main

sys.exit(main())
