"""snsim: a trace-driven simulator of GPU memory scheduling for DNN training."""
try:
    from importlib.metadata import PackageNotFoundError, version as _version
    __version__ = _version("snsim")
except PackageNotFoundError:   # a source tree that is not installed
    __version__ = "0.1.0"
