"""A file that one thread appends to, written around the page cache.

A trace writes tens of MB/s. Taken into the page cache, each new page of the
file costs the kernel far more than the copy itself: on a 2-vCPU VM,
appending 400 MB with ``write`` took 0.8-1.0 s of system time, and the same
with ``O_DIRECT`` from a reused, aligned buffer 0.035 s (docs/tracing.md).
On a machine where everything shares one CPU that time is the traced
connection's. So, where the file system takes ``O_DIRECT``:

* what is written is copied into one page-aligned buffer (an anonymous
  ``mmap``, reused), and each whole multiple of ``BLOCK`` bytes is written
  with ``O_DIRECT`` at its offset;
* the rest (less than ``BLOCK``: the cut last line) stays in the buffer, and
  is also written through the page cache, at the same offset, by a second
  descriptor, so a reader of the file sees every line whole after each
  ``write``; the next direct write covers that block again (the kernel keeps
  the two kinds of write coherent).

Anywhere else (no ``O_DIRECT``, a file system or a device that refuses it,
at open or at any write, a path that is not a regular file: a FIFO,
``/dev/stdout``) it writes through the page cache, as plain files do. What the file holds is the same either way.
"""

from __future__ import annotations

import mmap
import os
import stat

__all__ = ("BLOCK", "AppendFile")

# Alignment of direct writes: buffer address, length and file offset. 4 KiB is
# a multiple of every logical block size in use (512 and 4096).
BLOCK = 4096
# The aligned buffer; a write of more is sent in pieces of this size.
BUFFER_SIZE = 1024 * 1024
_O_DIRECT: int = getattr(os, "O_DIRECT", 0)
_O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)


class AppendFile:
    """``path``, truncated, appended to by ``write`` from one thread at a time."""

    def __init__(self, path: str | os.PathLike[str], *, direct: bool = True) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _O_CLOEXEC, 0o666)
        self._direct_fd = -1
        self._buffer: mmap.mmap | None = None
        self._used = 0  # bytes in the buffer from _offset on
        self._offset = 0  # the file offset of the buffer's first byte, a multiple of BLOCK
        # Only a regular file has offsets to write at (not a FIFO, /dev/stdout).
        if direct and _O_DIRECT and stat.S_ISREG(os.fstat(self._fd).st_mode):
            try:
                self._direct_fd = os.open(path, os.O_WRONLY | _O_DIRECT | _O_CLOEXEC)
            except OSError:
                pass
            else:
                # Private: a child forked meanwhile does not share it.
                self._buffer = mmap.mmap(-1, BUFFER_SIZE, flags=mmap.MAP_PRIVATE)

    @property
    def direct(self) -> bool:
        """Whether writes still go around the page cache."""
        return self._buffer is not None

    def write(self, parts: list[bytes]) -> None:
        """Append ``parts``; when it returns, the file holds all of them."""
        buffer = self._buffer
        if buffer is None:
            _write_all(self._fd, parts)
            return
        copied = 0  # bytes of parts in the buffer (or written from it)
        try:
            for part in parts:
                view = memoryview(part)
                while view:
                    taken = min(BUFFER_SIZE - self._used, len(view))
                    buffer[self._used : self._used + taken] = view[:taken]
                    self._used += taken
                    copied += taken
                    view = view[taken:]
                    if self._used == BUFFER_SIZE:
                        self._write_direct(BUFFER_SIZE)
            self._write_direct(self._used - self._used % BLOCK)
        except OSError:
            # Refused (EINVAL from a file system that takes the flag at open
            # only, say): on through the page cache from here.
            self._stop_direct(b"".join(parts)[copied:])
            return
        if self._used:
            _pwrite_all(self._fd, memoryview(buffer)[: self._used], self._offset)

    def close(self) -> None:
        """Close the file (again: nothing happens)."""
        fd, self._fd = self._fd, -1
        try:
            if fd >= 0:
                os.close(fd)
        finally:
            self._close_direct()

    def _write_direct(self, size: int) -> None:
        if not size:
            return
        assert self._buffer is not None
        _pwrite_all(self._direct_fd, memoryview(self._buffer)[:size], self._offset)
        self._offset += size
        rest = self._used - size
        if rest:
            self._buffer.move(0, size, rest)
        self._used = rest

    def _stop_direct(self, rest: bytes) -> None:
        """Write through the page cache from now on: first what the buffer
        holds (from the last direct write's end), then ``rest``, what it had
        no room for yet. Data only grows, so this covers any tail written
        before."""
        assert self._buffer is not None
        held = bytes(self._buffer[: self._used])
        # Dropped, not closed: the failed write's frames may still hold views
        # of it; it goes when they do.
        self._buffer = None
        self._close_direct()
        os.lseek(self._fd, self._offset, os.SEEK_SET)
        _write_all(self._fd, [held, rest])

    def _close_direct(self) -> None:
        if self._buffer is not None:
            self._buffer.close()
            self._buffer = None
        if self._direct_fd >= 0:
            fd, self._direct_fd = self._direct_fd, -1
            os.close(fd)


def _pwrite_all(fd: int, data: memoryview, offset: int) -> None:
    while data:
        written = os.pwrite(fd, data, offset)
        data = data[written:]
        offset += written


def _write_all(fd: int, parts: list[bytes]) -> None:
    """Write ``parts`` in as few system calls as the kernel allows."""
    parts = [part for part in parts if part]
    start = 0
    while start < len(parts):
        written = os.writev(fd, parts[start : start + _IOV_MAX])
        while start < len(parts) and written >= len(parts[start]):
            written -= len(parts[start])
            start += 1
        if written:
            parts[start] = parts[start][written:]


# At most this many buffers per writev (Linux takes 1024).
_IOV_MAX = 1024
