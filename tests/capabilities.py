"""Running as root without the capabilities that bypass file modes (tests/zygote.py's `drop`)."""

from __future__ import annotations

import ctypes

PR_CAPBSET_DROP = 24
LINUX_CAPABILITY_VERSION_3 = 0x20080522


def drop_capabilities(capabilities: list[int]) -> None:
    """Drop `capabilities` (numbers: CAP_DAC_OVERRIDE is 1) from this process's bounding,
    effective, permitted and inheritable sets, as `setpriv --bounding-set=-...` leaves the
    program it runs as root: still uid 0, but bound by file modes (what it runs, too). Linux."""

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [(name, ctypes.c_uint32) for name in ("effective", "permitted", "inheritable")]

    libc = ctypes.CDLL(None, use_errno=True)
    for capability in capabilities:
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), f"cannot drop capability {capability}")
    header, data = Header(LINUX_CAPABILITY_VERSION_3, 0), (Data * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    for capability in capabilities:
        word, bit = divmod(capability, 32)
        for name in ("effective", "permitted", "inheritable"):
            setattr(data[word], name, getattr(data[word], name) & ~(1 << bit))
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")
