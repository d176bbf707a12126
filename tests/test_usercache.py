"""The user cache's keyed tables (snsim.usercache.load_derived_keyed): what the second process
reads back is what the first one built, a row per lookup."""
import pickle

import pytest

from snsim import usercache


def _build_counting(calls):
    def build(source):
        calls.append(source)
        return {"exact": {"conv a": [1, 2], "conv b": [3]},
                "scaled": {"n": [(8, [4, 5], None)]},
                "grouped": {("fwd", 4): [(0.5, 1.0, 2, 3)]}, "file": "x.json.gz"}
    return build


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    src = tmp_path / "table.json"
    src.write_text("{}")
    return src


def test_second_load_reads_the_same_table_by_key(cache_home):
    calls = []
    build = _build_counting(calls)
    first = usercache.load_derived_keyed("t", cache_home, __file__, build,
                                         keyed=("exact", "scaled"))
    again = usercache.load_derived_keyed("t", cache_home, __file__, build,
                                         keyed=("exact", "scaled"))
    assert len(calls) == 1                      # built once, then read from the cache
    assert isinstance(again["exact"], usercache.KeyedTable)
    assert dict(again["exact"]) == first["exact"]
    assert dict(again["scaled"]) == first["scaled"]
    assert again["grouped"] == first["grouped"] and again["file"] == "x.json.gz"
    t = again["exact"]
    assert "conv a" in t and "conv z" not in t
    assert t["conv b"] == [3] and t.get("conv z") is None
    with pytest.raises(KeyError):
        t["conv z"]
    assert list(t) == ["conv a", "conv b"] and len(t) == 2 and bool(t)
    back = pickle.loads(pickle.dumps(t))        # names its file only
    assert back["conv a"] == [1, 2]


def test_a_changed_source_or_a_broken_file_is_built_again(cache_home):
    calls = []
    build = _build_counting(calls)
    usercache.load_derived_keyed("t", cache_home, __file__, build, keyed=("exact",))
    cached = next((cache_home.parent / "cache" / "snsim" / "t").glob("*.sqlite"))
    cached.write_bytes(b"not a database")
    got = usercache.load_derived_keyed("t", cache_home, __file__, build, keyed=("exact",))
    assert len(calls) == 2 and got["exact"]["conv a"] == [1, 2]
    cache_home.write_text('{"changed": 1}')     # another size: another cache entry
    usercache.load_derived_keyed("t", cache_home, __file__, build, keyed=("exact",))
    assert len(calls) == 3


def test_an_unwritable_cache_still_returns_the_table(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))   # a file: no folder can be made
    src = tmp_path / "table.json"
    src.write_text("{}")
    calls = []
    got = usercache.load_derived_keyed("t", src, __file__, _build_counting(calls),
                                       keyed=("exact",))
    assert got["exact"]["conv b"] == [3] and len(calls) == 1
