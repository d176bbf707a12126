"""The user cache (``$XDG_CACHE_HOME/snsim``, else ``~/.cache/snsim``): derived tables kept per
version of their source file, so that a ``snsim predict`` does not re-parse them. Best effort:
a cache that cannot be read or written is skipped by the callers."""
from __future__ import annotations

import collections.abc
import hashlib
import os
import pickle
import sqlite3
from pathlib import Path


def cache_file(kind, *key_parts, suffix):
    """The cache file of ``kind`` (a subfolder) for a version named by ``key_parts``."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    key = hashlib.sha1("\0".join(str(p) for p in key_parts).encode()).hexdigest()
    return Path(root) / "snsim" / kind / f"{key}{suffix}"


def _derived_file(kind, source, code, suffix):
    """The cache file of a table derived from ``source`` by the module file ``code``, for this
    version of both (path, modification time and size)."""
    st, me = os.stat(source), os.stat(code)
    return cache_file(kind, Path(source).resolve(), st.st_mtime_ns, st.st_size,
                      me.st_mtime_ns, me.st_size, suffix=suffix)


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
    cached = _derived_file(kind, source, code, ".pickle")
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


class KeyedTable(collections.abc.Mapping):
    """A read-only mapping of string keys kept in one table of an SQLite file, each value
    pickled: a lookup reads one row, so a process that asks for a few hundred keys of a
    100k-key table does not unpickle the rest. The connection is opened per process (never
    carried across a fork) and a pickled table names only its file."""

    def __init__(self, path, table):
        self.path, self.table = str(path), table
        self._pid, self._db, self._len = None, None, None

    def _conn(self):
        if self._pid != os.getpid():
            self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True,
                                       check_same_thread=False)
            self._pid = os.getpid()
        return self._db

    def __reduce__(self):
        return KeyedTable, (self.path, self.table)

    def __getitem__(self, key):
        row = self._conn().execute(f"SELECT v FROM {self.table} WHERE k = ?",
                                   (key,)).fetchone()
        if row is None:
            raise KeyError(key)
        return pickle.loads(row[0])

    def __contains__(self, key):
        return self._conn().execute(f"SELECT 1 FROM {self.table} WHERE k = ?",
                                    (key,)).fetchone() is not None

    def __iter__(self):
        return (k for (k,) in self._conn().execute(f"SELECT k FROM {self.table} ORDER BY k"))

    def __len__(self):
        if self._len is None:    # read-only: counted once
            self._len = self._conn().execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0]
        return self._len


def _write_keyed(path, obj, keyed):
    """``obj`` (a dict) as an SQLite file at ``path``: each entry named in ``keyed`` (a dict of
    string keys) as a table of its own, the rest pickled in table ``rest``; written through a
    temporary file and a rename. An unwritable cache is skipped (False)."""
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.unlink(missing_ok=True)
        db = sqlite3.connect(tmp)
        try:
            with db:
                db.execute("CREATE TABLE rest (v BLOB)")
                db.execute("INSERT INTO rest VALUES (?)", (pickle.dumps(
                    {k: v for k, v in obj.items() if k not in keyed}),))
                for name in keyed:
                    db.execute(f"CREATE TABLE {name} (k TEXT PRIMARY KEY, v BLOB) WITHOUT ROWID")
                    db.executemany(f"INSERT INTO {name} VALUES (?, ?)",
                                   ((k, pickle.dumps(v)) for k, v in obj[name].items()))
        finally:
            db.close()
        os.replace(tmp, path)
        return True
    except (OSError, sqlite3.Error):
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        return False


def load_derived_keyed(kind, source, code, build, keyed, valid=lambda obj: True):
    """:func:`load_derived` for a table whose large entries are looked up by key: ``build
    (source)`` returns a dict whose entries named in ``keyed`` map strings to picklable
    values; the cache keeps them as :class:`KeyedTable` tables of an SQLite file (read a row
    per lookup) and the rest pickled. The first call returns the built dict itself."""
    cached = _derived_file(kind, source, code, ".sqlite")
    try:
        if cached.exists():
            db = sqlite3.connect(f"file:{cached}?mode=ro", uri=True)
            try:
                obj = pickle.loads(db.execute("SELECT v FROM rest").fetchone()[0])
            finally:
                db.close()
            obj.update({name: KeyedTable(cached, name) for name in keyed})
            if valid(obj):
                return obj
    except (OSError, sqlite3.Error, TypeError, pickle.UnpicklingError, EOFError,
            AttributeError, ImportError):
        pass
    obj = build(source)
    _write_keyed(cached, obj, keyed)
    return obj
