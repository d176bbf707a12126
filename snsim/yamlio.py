"""Read a YAML mapping at the config boundary, with line numbers for error messages."""
from __future__ import annotations

from pathlib import Path

import yaml

from .errors import ConfigError


def read_yaml_mapping(path, *, what, prefix, shown=None, loader=yaml.SafeLoader):
    """Parse ``path`` as a YAML mapping; every problem is one ConfigError line.

    Parameters
    ----------
    what : str
        How the file is named in messages ("hardware file", "sweep file").
    prefix : str
        Field prefix in messages (``hardware`` gives ``hardware.dram_bytes``).
    shown : str, optional
        The path as messages print it (default ``str(path)``).
    loader : yaml loader class

    Returns
    -------
    (data, node) : the mapping and its YAML node (for line numbers)
    """
    shown = shown or str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{what} {shown} does not exist") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{what} {shown} is not UTF-8 text: byte {e.object[e.start]:#04x} at "
                          f"offset {e.start}") from None
    except OSError as e:
        raise ConfigError(f"cannot read {what} {shown}: {e.strerror or e}") from None
    ld = None
    try:
        ld = loader(text)    # the reader rejects control characters here already
        node = ld.get_single_node()
        data = ld.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        pos = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        what_ = " ".join(str(x) for x in (e.context, e.problem) if x)
        raise ConfigError(f"{what} {shown}{pos} is not valid YAML: {what_}") from None
    except yaml.reader.ReaderError as e:
        code = e.character if isinstance(e.character, int) else ord(e.character)
        raise ConfigError(f"{what} {shown} is not valid YAML: character U+{code:04X} at "
                          f"offset {e.position} is not allowed") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{what} {shown} is not valid YAML: {' '.join(str(e).split())}") from None
    finally:
        if ld is not None:
            ld.dispose()
    if not isinstance(data, dict):
        raise ConfigError(f"{what} {shown} must hold a mapping of keys to values, "
                          f"not {type(data).__name__}")
    seen = set()
    for key_node, _ in node.value:
        if key_node.value in seen:
            raise ConfigError(f"{prefix}.{key_node.value} is set twice "
                              f"({shown}:{key_node.start_mark.line + 1}); keep one")
        seen.add(key_node.value)
    return data, node
