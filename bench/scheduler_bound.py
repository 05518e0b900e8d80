"""What bounds a -j2 clean build: a stand-in for the runner's scheduler, with nothing of the runner in it.

N steps, each `md5sum SRC > OUT` started by posix_spawn, at most J at once, waited for with pidfds in epoll, and
W ms of busy Python on the main thread per step (half before the start, half after the exit: the runner's own
work of deciding, hashing, storing and reporting). Variant `main` spawns on the main thread with os.posix_spawn,
which holds the GIL through the vfork wait for the child's exec (as runner's steps/spawn.py does); variant
`thread` spawns on a spawner thread through ctypes, which leaves the GIL, and posts each pid back through a pipe.
Session 14 measured both (bench/NOTES.md, "The clean build at -j2"): the wall follows W, not the variant.

    .venv/bin/python bench/scheduler_bound.py --steps 4000 --work-ms 1.3 0.6 0.2 --variants main thread
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import queue
import select
import tempfile
import threading
import time

POSIX_SPAWN_SETSID = 0x80  # glibc's value


class _FileActions(ctypes.Structure):
    _fields_ = [("opaque", ctypes.c_byte * 80)]  # posix_spawn_file_actions_t is 80 bytes on x86-64 glibc


class _Attributes(ctypes.Structure):
    _fields_ = [("opaque", ctypes.c_byte * 336)]  # posix_spawnattr_t is 336 bytes on x86-64 glibc


def _busy(ms: float) -> None:
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end:
        pass


class Stand:
    def __init__(self, folder: str, variant: str):
        self.folder = folder
        self.variant = variant
        self.libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self.env_list = [f"{k}={v}".encode() for k, v in os.environ.items()]
        self.epoll = select.epoll()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        self.epoll.register(self.wake_r, select.EPOLLIN)
        self.posted: list[int] = []
        self.requests: queue.SimpleQueue[int | None] = queue.SimpleQueue()
        if variant == "thread":
            threading.Thread(target=self._spawner, daemon=True).start()

    def paths(self, i: int) -> tuple[str, str]:
        return f"{self.folder}/src/f{i % 2000}.txt", f"{self.folder}/out/s{i}.md5"

    def _ctypes_spawn(self, src: str, out: str) -> int:
        libc, actions, attributes = self.libc, _FileActions(), _Attributes()
        libc.posix_spawn_file_actions_init(ctypes.byref(actions))
        mode = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        libc.posix_spawn_file_actions_addopen(ctypes.byref(actions), 1, out.encode(), mode, 0o666)
        libc.posix_spawnattr_init(ctypes.byref(attributes))
        libc.posix_spawnattr_setflags(ctypes.byref(attributes), ctypes.c_short(POSIX_SPAWN_SETSID))
        argv = (ctypes.c_char_p * 3)(b"md5sum", src.encode(), None)
        envp = (ctypes.c_char_p * (len(self.env_list) + 1))(*self.env_list, None)
        pid = ctypes.c_int()
        code = libc.posix_spawn(
            ctypes.byref(pid), b"/usr/bin/md5sum", ctypes.byref(actions), ctypes.byref(attributes), argv, envp
        )
        libc.posix_spawn_file_actions_destroy(ctypes.byref(actions))
        libc.posix_spawnattr_destroy(ctypes.byref(attributes))
        if code:
            raise OSError(code, os.strerror(code))
        return pid.value

    def _spawner(self) -> None:
        while (i := self.requests.get()) is not None:
            self.posted.append(self._ctypes_spawn(*self.paths(i)))
            os.write(self.wake_w, b"s")

    def _watch(self, pid: int, pidfds: dict[int, int]) -> None:
        fd = os.pidfd_open(pid)
        pidfds[fd] = pid
        self.epoll.register(fd, select.EPOLLIN)

    def run(self, steps: int, work_ms: float, jobs: int) -> float:
        started = done = in_flight = 0
        pidfds: dict[int, int] = {}
        begun = time.perf_counter()
        while done < steps:
            while started < steps and in_flight < jobs:
                _busy(work_ms / 2)
                if self.variant == "main":
                    src, out = self.paths(started)
                    opened = (os.POSIX_SPAWN_OPEN, 1, out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
                    argv = ["md5sum", src]
                    pid = os.posix_spawn("/usr/bin/md5sum", argv, os.environ, file_actions=[opened], setsid=True)
                    self._watch(pid, pidfds)
                else:
                    self.requests.put(started)
                started += 1
                in_flight += 1
            for fd, _mask in self.epoll.poll():
                if fd == self.wake_r:
                    os.read(self.wake_r, 4096)
                    while self.posted:
                        self._watch(self.posted.pop(0), pidfds)
                    continue
                self.epoll.unregister(fd)
                os.close(fd)
                os.waitpid(pidfds.pop(fd), 0)
                _busy(work_ms / 2)
                done += 1
                in_flight -= 1
        wall = time.perf_counter() - begun
        self.requests.put(None)  # the spawner thread, if any, ends
        self.epoll.close()
        os.close(self.wake_r)
        os.close(self.wake_w)
        return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--work-ms", type=float, nargs="+", default=[1.3, 0.6, 0.2])
    ap.add_argument("--variants", nargs="+", default=["main", "thread"], choices=["main", "thread"])
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        os.mkdir(f"{folder}/src")
        os.mkdir(f"{folder}/out")
        for i in range(2000):
            with open(f"{folder}/src/f{i}.txt", "w") as f:
                f.write(f"file {i}\n")
        for _round in range(args.rounds):
            for work_ms in args.work_ms:
                for variant in args.variants:
                    wall = Stand(folder, variant).run(args.steps, work_ms, args.jobs)
                    print(f"{variant:6} W={work_ms} ms -j{args.jobs} {args.steps} steps: {wall:.2f} s", flush=True)


if __name__ == "__main__":
    main()
