"""Simulated hardware: GPU presets and their link to the host (SPEC §9).

Examples
--------
>>> from snsim.hardware import load_hardware, DEFAULT_HARDWARE
>>> load_hardware(DEFAULT_HARDWARE).name
'k40c'
"""
from .spec import (DEFAULT_HARDWARE, EFFICIENCY_KEYS, HardwareSpec, list_hardware,
                   load_hardware, spec_from_mapping)

__all__ = ["DEFAULT_HARDWARE", "EFFICIENCY_KEYS", "HardwareSpec", "list_hardware",
           "load_hardware", "spec_from_mapping"]
