"""CRC-32C (Castagnoli) from the crc32c package's C extension, without its __init__.

`import crc32c` runs the package's __init__, which reads its own version with
importlib.metadata and imports its command-line module (argparse): 15-40 ms of
a broker's start (issue #15: start ≤ 0.3 s) for the one function used here.
The extension module is loaded from the package's directory by itself; if the
package is laid out differently, the ordinary import is used.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from typing import Any

_EXTENSION = "crc32c._crc32c"


def _load() -> Callable[..., int]:
    module: Any = sys.modules.get(_EXTENSION)
    if module is None:
        package = importlib.util.find_spec("crc32c")  # finds, does not run, the package
        locations = package.submodule_search_locations if package else None
        spec = (
            importlib.machinery.PathFinder.find_spec(_EXTENSION, locations) if locations else None
        )
        if spec is None or not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader):
            from crc32c import crc32c as ordinary

            return ordinary
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        # A later `import crc32c` (a client library) reuses this module.
        sys.modules[_EXTENSION] = module
    return module.crc32c  # type: ignore[no-any-return]


crc32c: Callable[..., int] = _load()
