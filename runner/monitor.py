"""What the machine is (psutil, platform) and, during rounds, how busy it is."""

import platform
import socket
from pathlib import Path

import psutil


def cpu_model() -> str:
    """The CPU's marketing name (``/proc/cpuinfo`` on Linux, where ``platform`` says only the architecture)."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def describe_host() -> dict:
    """This machine's hardware and OS, as stored on :class:`results.models.Machine`."""
    frequency = psutil.cpu_freq()
    return {
        "hostname": socket.gethostname(),
        "cpu_model": cpu_model(),
        "cores": psutil.cpu_count(logical=True) or 1,
        "memory_bytes": psutil.virtual_memory().total,
        "os": f"{platform.system()} {platform.release()} ({platform.platform(terse=True)})",
        "hardware": {
            "physical_cores": psutil.cpu_count(logical=False),
            "architecture": platform.machine(),
            "cpu_max_mhz": frequency.max if frequency else None,
            "disks": [
                {"device": part.device, "mountpoint": part.mountpoint, "fstype": part.fstype}
                for part in psutil.disk_partitions(all=False)
            ][:8],
            "python": platform.python_version(),
        },
    }
