"""distributed's NVML diagnostics, turned off where this pynvml breaks them.

distributed releases before its February 2023 fix (Debian bookworm's 2022.12.1 among them)
read a GPU's name as ``pynvml.nvmlDeviceGetName(h).decode()``; pynvml 11.5 and nvidia-ml-py
11.515 and later return ``str`` there, so every Scheduler, Nanny and Worker
that starts its system monitor in such a process fails ("'str' object has no attribute
'decode'"), whether or not rmmgo is involved. Where that combination is found, importing
rmmgo.dask sets ``distributed.diagnostics.nvml`` to False, as a user would by hand: the
processes start, Dask's dashboard loses its GPU utilisation plots, and rmmgo.dask still
reports each worker's GPU memory (memory_statistics, the worker metrics). Worker processes
started by a Nanny of this process inherit the setting with the rest of the config.
"""

import logging

import dask.config

__all__ = ["CONFIG_KEY", "distributed_nvml_broken", "turn_off_broken_nvml"]

logger = logging.getLogger("rmmgo.dask")

CONFIG_KEY = "distributed.diagnostics.nvml"


def distributed_nvml_broken():
    """Whether distributed's reading of a GPU's name fails with this pynvml.

    Asks NVML for device 0's handle and calls distributed's own reader on it; False when
    there is no pynvml, no NVML or no GPU (distributed then turns its diagnostics off
    itself), or when the reader works.
    """
    try:
        from distributed.diagnostics import nvml
    except ImportError:
        return False
    pynvml = getattr(nvml, "pynvml", None)
    get_name = getattr(nvml, "_get_name", None)
    if pynvml is None or get_name is None:
        return False
    try:
        pynvml.nvmlInit()
    except Exception:
        return False
    try:
        if pynvml.nvmlDeviceGetCount() < 1:
            return False
        get_name(pynvml.nvmlDeviceGetHandleByIndex(0))
    except AttributeError:
        return True  # 'str' object has no attribute 'decode'
    except Exception:
        return False
    finally:
        try:
            pynvml.nvmlShutdown()  # NVML counts its initialisations: distributed's, if any, stays
        except Exception:
            pass
    return False


def turn_off_broken_nvml():
    """Sets distributed.diagnostics.nvml to False if it is on and distributed_nvml_broken().

    Also marks distributed's NVML state as turned off by the config if this process had
    initialised it already (distributed reads the setting only before that). Returns
    whether it turned the diagnostics off.
    """
    if not dask.config.get(CONFIG_KEY, default=False) or not distributed_nvml_broken():
        return False
    dask.config.set({CONFIG_KEY: False})
    from distributed.diagnostics import nvml

    states = getattr(nvml, "NVMLState", None)
    if states is not None and getattr(nvml, "NVML_STATE", None) == getattr(states, "INITIALIZED", None):
        nvml.NVML_STATE = states.DISABLED_CONFIG
    logger.info(
        "rmmgo.dask: this distributed cannot read GPU names from this pynvml (it returns str where "
        "distributed calls .decode()): %s is set to False; rmmgo.dask reports GPU memory itself",
        CONFIG_KEY,
    )
    return True
