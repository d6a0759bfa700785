"""The trace file: written around the page cache where the file system takes
O_DIRECT, through it elsewhere, and always holding exactly what was written,
every line whole after each write (acp_fast/_io/append_file.py)."""

from __future__ import annotations

import errno
import os
import random
from pathlib import Path

import pytest

from acp_fast._io import append_file
from acp_fast._io.append_file import BLOCK, BUFFER_SIZE, AppendFile


def takes_o_direct(directory: Path) -> bool:
    """Whether this file system lets a file be opened with O_DIRECT."""
    flag = getattr(os, "O_DIRECT", 0)
    if not flag:
        return False
    probe = directory / "probe"
    probe.write_bytes(b"")
    try:
        os.close(os.open(probe, os.O_WRONLY | flag))
    except OSError:
        return False
    finally:
        probe.unlink()
    return True


def batches(seed: int) -> list[list[bytes]]:
    """Writes of lines of every size: tiny, around a block, past the buffer."""
    chooser = random.Random(seed)
    sizes = [1, 5, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 7, BUFFER_SIZE + 13, 2 * BUFFER_SIZE]
    out: list[list[bytes]] = []
    number = 0
    for _ in range(24):
        parts = []
        for _ in range(chooser.randint(0, 4)):
            size = chooser.choice(sizes) if chooser.random() < 0.3 else chooser.randint(1, 600)
            number += 1
            parts.append(b"%08d" % number + b"x" * max(0, size - 9) + b"\n")
        out.append(parts)
    return out


def write_checking_each(file: AppendFile, path: Path, seed: int) -> None:
    """Write ``batches(seed)``, checking the file after each write, then close."""
    expected = b""
    try:
        for parts in batches(seed):
            file.write(parts)
            expected += b"".join(parts)
            # A reader sees every line whole: the cut tail is on disk too.
            assert path.read_bytes() == expected
    finally:
        file.close()
    assert path.read_bytes() == expected


@pytest.mark.parametrize("direct", [True, False])
def test_the_file_holds_exactly_what_was_written_after_every_write(
    tmp_path: Path, direct: bool
) -> None:
    path = tmp_path / "t.jsons"
    file = AppendFile(path, direct=direct)
    assert file.direct is (direct and takes_o_direct(tmp_path))
    write_checking_each(file, path, seed=1)


def test_the_file_is_truncated_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "t.jsons"
    path.write_bytes(b"old contents\n" * 1000)
    file = AppendFile(path)
    file.write([b"new\n"])
    file.close()
    assert path.read_bytes() == b"new\n"


def test_without_o_direct_it_writes_through_the_page_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(append_file, "_O_DIRECT", 0)
    path = tmp_path / "t.jsons"
    file = AppendFile(path)
    assert not file.direct
    file.write([b"a\n", b"b\n"])
    file.close()
    assert path.read_bytes() == b"a\nb\n"


@pytest.mark.parametrize("fail_at", [0, 1, 3])
def test_a_direct_write_refused_midway_goes_on_through_the_page_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_at: int
) -> None:
    """A file system that takes O_DIRECT at open and refuses the write
    (EINVAL) loses nothing: the rest goes through the page cache."""
    if not takes_o_direct(tmp_path):
        pytest.skip("this file system refuses O_DIRECT at open: the fallback at open runs")
    path = tmp_path / "t.jsons"
    file = AppendFile(path)
    direct_fd = file._direct_fd
    real_pwrite = os.pwrite
    calls = 0

    def pwrite(fd: int, data: object, offset: int) -> int:
        nonlocal calls
        if fd == direct_fd:
            calls += 1
            if calls > fail_at:
                raise OSError(errno.EINVAL, "Invalid argument")
        return real_pwrite(fd, data, offset)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "pwrite", pwrite)
    write_checking_each(file, path, seed=2)
    assert not file.direct


def test_a_path_that_cannot_be_written_raises_at_open(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        AppendFile(tmp_path)
    with pytest.raises(FileNotFoundError):
        AppendFile(tmp_path / "missing" / "t.jsons")


def test_a_fifo_is_written_in_order_without_offsets(tmp_path: Path) -> None:
    """A path that is not a regular file (a FIFO, /dev/stdout) has no
    offsets: it is written through plain writes, in order."""
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as reader:
            received.append(reader.read())

    reader = threading.Thread(target=read)
    reader.start()
    file = AppendFile(fifo)
    assert not file.direct
    parts = [b"%d\n" % n * (n + 1) for n in range(200)]
    file.write(parts[:100])
    file.write(parts[100:])
    file.close()
    reader.join(10)
    assert received == [b"".join(parts)]


def test_closing_twice_does_nothing_the_second_time(tmp_path: Path) -> None:
    file = AppendFile(tmp_path / "t.jsons")
    file.write([b"a\n"])
    file.close()
    file.close()  # the descriptor number may be another file's by now
    assert (tmp_path / "t.jsons").read_bytes() == b"a\n"
