"""install_as_rmm(): let ``import rmm`` give rmmgo, for code written for RMM.

After ``rmmgo.install_as_rmm()``, importing ``rmm`` or any ``rmm.<sub>``
module gives the rmmgo module of the same path (``rmm.rmm``, RMM's home of
reinitialize, is ``rmmgo._rmm``), the same module object: ``import rmm.mr``
binds ``rmmgo.mr`` itself, so ``rmm.DeviceBuffer is rmmgo.DeviceBuffer``.
Modules are aliased as they are imported, so optional integrations
(``rmm.allocators.cupy`` ...) import their framework only when asked for.

Nothing is aliased until install_as_rmm() is called. It refuses, with
ImportError, when another ``rmm`` (the real RMM) is already imported:
objects of the two would not mix.
"""

import importlib
import importlib.abc
import importlib.machinery
import sys
import threading

__all__ = ["install_as_rmm", "uninstall_as_rmm"]

_ALIAS = "rmm"
_TARGET = __name__.rpartition(".")[0]  # "rmmgo"
# RMM module paths whose rmmgo module has another name.
_RENAMED = {"rmm.rmm": _TARGET + "._rmm"}

_lock = threading.Lock()
_finder = None


def _target_name(fullname):
    if fullname in _RENAMED:
        return _RENAMED[fullname]
    return _TARGET + fullname[len(_ALIAS):]


class _AliasLoader(importlib.abc.Loader):
    """Hands the import system an rmmgo module that is already imported."""

    def __init__(self, module):
        self._module = module

    def create_module(self, spec):
        return self._module

    def exec_module(self, module):
        # The import system set __spec__ to the alias's spec; the module keeps
        # its own (its name stays "rmmgo...", so pickles and reloads name it).
        module.__spec__ = self._original_spec

    def _set(self, module):
        self._original_spec = module.__spec__
        return self


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``rmm`` and ``rmm.*`` as the rmmgo modules of the same path."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _ALIAS and not fullname.startswith(_ALIAS + "."):
            return None
        module = importlib.import_module(_target_name(fullname))
        loader = _AliasLoader(module)._set(module)
        is_package = hasattr(module, "__path__")
        spec = importlib.machinery.ModuleSpec(fullname, loader, is_package=is_package)
        if is_package:
            spec.submodule_search_locations = list(module.__path__)
        return spec


def _is_ours(module):
    return getattr(module, "__name__", "").split(".")[0] == _TARGET


def install_as_rmm():
    """Make ``import rmm`` (and every ``rmm.<sub>``) give rmmgo's modules.

    Idempotent. Raises ImportError if a module named ``rmm`` that is not
    rmmgo's is already imported. Returns the rmmgo package.
    """
    global _finder
    with _lock:
        existing = sys.modules.get(_ALIAS)
        if existing is not None and not _is_ours(existing):
            where = getattr(existing, "__file__", None) or repr(existing)
            raise ImportError(
                "rmmgo.install_as_rmm(): a module named 'rmm' is already imported (%s); "
                "call install_as_rmm() before anything imports RMM, or use RMM itself" % where
            )
        if _finder is None:
            _finder = _AliasFinder()
            sys.meta_path.insert(0, _finder)
        # Modules imported already under rmmgo's names get their alias now,
        # so that `import rmm.x` returns them without a second import.
        for name, module in list(sys.modules.items()):
            if module is None or not (name == _TARGET or name.startswith(_TARGET + ".")):
                continue
            alias = _ALIAS + name[len(_TARGET):]
            if name == _RENAMED.get("rmm.rmm"):
                alias = "rmm.rmm"
            sys.modules.setdefault(alias, module)
        if "rmm.rmm" not in sys.modules:
            sys.modules["rmm.rmm"] = importlib.import_module(_RENAMED["rmm.rmm"])
        return sys.modules[_TARGET]


def uninstall_as_rmm():
    """Undo install_as_rmm(): ``import rmm`` no longer gives rmmgo (for tests and tools)."""
    global _finder
    with _lock:
        if _finder is not None:
            try:
                sys.meta_path.remove(_finder)
            except ValueError:
                pass
            _finder = None
        for name in [n for n in sys.modules if n == _ALIAS or n.startswith(_ALIAS + ".")]:
            if _is_ours(sys.modules[name]):
                del sys.modules[name]
