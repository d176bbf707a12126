"""The user cache (``$XDG_CACHE_HOME/snsim``, else ``~/.cache/snsim``): derived tables kept per
version of their source file, so that a ``snsim predict`` does not re-parse them. Best effort:
a cache that cannot be read or written is skipped by the callers."""
from __future__ import annotations

import hashlib
import os
import pickle
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


def load_derived(kind, source, code, build, valid=lambda obj: True):
    """``build(source)``, kept in the cache per version of ``source`` and of the module file
    ``code`` that derives it (path, modification time and size of both): a pickled table that
    costs seconds to derive loads in a fraction of that. An entry that cannot be read, or that
    ``valid`` rejects, is derived again."""
    st, me = os.stat(source), os.stat(code)
    cached = cache_file(kind, Path(source).resolve(), st.st_mtime_ns, st.st_size,
                        me.st_mtime_ns, me.st_size, suffix=".pickle")
    try:
        with open(cached, "rb") as f:
            obj = pickle.load(f)
        if valid(obj):
            return obj
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        pass
    obj = build(source)
    write_atomic(cached, pickle.dumps(obj))
    return obj
