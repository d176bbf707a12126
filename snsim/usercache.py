"""The user cache (``$XDG_CACHE_HOME/snsim``, else ``~/.cache/snsim``): derived tables kept per
version of their source file, so that a ``snsim predict`` does not re-parse them. Best effort:
a cache that cannot be read or written is skipped by the callers."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path


def cache_file(kind, *key_parts, suffix):
    """The cache file of ``kind`` (a subfolder) for a version named by ``key_parts``."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    key = hashlib.sha1("\0".join(str(p) for p in key_parts).encode()).hexdigest()
    return Path(root) / "snsim" / kind / f"{key}{suffix}"


def write_atomic(path, data):
    """Write ``data`` (bytes) to ``path`` through a temporary file and a rename, so that a
    reader never sees half a file; an unwritable cache is skipped."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        pass
