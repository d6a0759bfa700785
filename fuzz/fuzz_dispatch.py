"""Coverage-guided fuzzing of a connection's dispatch path, with atheris.

Each input is a byte stream a peer might write. It is cut into reads (the
first two bytes choose the read sizes), fed to a real ``ConnectionTo``
through the loop-free driver (fuzz/driver.py) once per core, and then:

* nothing may escape the dispatch code (an exception is a crash);
* every line written must be a JSON-RPC response or a batch of them, valid
  UTF-8 JSON, at most one per line read, and every request answered;
* the compiled and the pure-Python core must write the same bytes.

Long runs (see fuzz/README.md)::

    pip install -e '.[fuzz]'
    mkdir -p /tmp/acp-corpus
    python fuzz/fuzz_dispatch.py /tmp/acp-corpus fuzz/seeds -max_total_time=600

Without atheris (CI, a quick check)::

    python fuzz/fuzz_dispatch.py --selftest 2000

runs the seeds and that many random mutations of them under plain Python.
"""

from __future__ import annotations

import logging
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SEEDS_DIR = Path(__file__).resolve().parent / "seeds"

# Well-formed and malformed inputs to start from (each a whole stream).
SEEDS: list[bytes] = [
    b'{"jsonrpc":"2.0","id":1,"method":"echo","params":{"message":"hi"}}\n',
    b'{"jsonrpc":"2.0","id":"s","method":"echo","params":[1,2.5,null,true,"x"]}\r\n',
    b'{"jsonrpc":"2.0","id":null,"method":"fail"}\n',
    b'{"jsonrpc":"2.0","method":"note","params":{"a":[{}]}}\n',
    b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}\n',
    b'{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/","mcpServers":[],"_meta":{"cwd":"x"}}}\n',
    b'[{"jsonrpc":"2.0","id":1,"method":"echo"},1,{"jsonrpc":"2.0","method":"note"}]\n',
    b'[]\n[1,2,3]\nnull\n17\n"s"\ntrue\n',
    b'{"jsonrpc":"2.0","id":9,"result":{"x":1}}\n{"jsonrpc":"2.0","id":9,"error":{"code":1,"message":"m"}}\n',
    b'{"jsonrpc":"2.0","id":1.5,"method":"echo"}\n{"jsonrpc":"1.0","id":1,"method":"echo"}\n',
    b'{"jsonrpc":"2.0","id":1,"method":"echo","params":5}\n{"jsonrpc":"2.0","id":1,"method":"echo","result":1}\n',
    b'{"jsonrpc":"2.0","id":"\\ud800","method":"echo"}\n{"jsonrpc":"2.0","id":1,"method":"e\xffcho"}\n',
    b'{"jsonrpc":"2.0","id":2,"method":"echo","params":{"m":"' + b"x" * 600 + b'"}}\n',
    b'{"id":' + b"9" * 30 + b',"method":"echo","params":"' + b"y" * 600 + b'"}\n',
    b'{"jsonrpc":"2.0","id":4,"method":"echo","params":[' + b"[" * 200 + b"]" * 200 + b"]}\n",
    b"{not json\n\n \n\x00\n1e400\n[1e400]\n",
    b'{"jsonrpc":"2.0","id":5,"method":"echo","params":{"m":"\\u00e9\\ud834\\udd1e"}}',
]


def split(data: bytes) -> tuple[bytes, list[bytes]]:
    """The stream an input stands for, and the reads it arrives in."""
    if len(data) < 2:
        return data, [data] if data else []
    first, second, stream = 1 + data[0], 1 + data[1] % 64, data[2:]
    chunks, start, sizes = [], 0, (first, second)
    while start < len(stream):
        size = sizes[len(chunks) % 2]
        chunks.append(stream[start : start + size])
        start += size
    return stream, chunks


def one_input(data: bytes) -> None:
    from fuzz.driver import check_output, dispatch, use_core

    stream, chunks = split(data)
    outputs = []
    for tag in CORES:
        with use_core(tag):
            output, conn = dispatch(chunks)
            check_output(stream, output, conn)
        outputs.append(output)
    if len(outputs) == 2 and outputs[0] != outputs[1]:
        raise AssertionError(f"the cores disagree:\nc:  {outputs[0]!r}\npy: {outputs[1]!r}")


def _available_cores() -> list[str]:
    try:
        import acp_fast._core._messages_c  # noqa: F401
    except ImportError:
        return ["py"]
    return ["c", "py"]


CORES: list[str] = []


def mutate(data: bytes, rng: random.Random) -> bytes:
    """A few random edits, as a mutation fuzzer would make."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        at = rng.randint(0, len(out))
        op = rng.randrange(7)
        if op == 0:
            del out[at : at + rng.randint(1, 16)]
        elif op == 1:
            out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        elif op == 2 and at < len(out):
            out[at] ^= 1 << rng.randrange(8)
        elif op == 3:
            out[at:at] = rng.choice(
                [
                    b"\n",
                    b"\r\n",
                    b"[",
                    b"]",
                    b"{",
                    b"}",
                    b'"',
                    b"\\",
                    b",",
                    b":",
                    b"1e400",
                    b"\\ud800",
                    b"\xff",
                ]
            )
        elif op == 4:
            out[at:at] = out[at : at + rng.randint(1, 64)] * rng.randint(1, 20)
        elif op == 5:
            other = rng.choice(SEEDS)
            out[at:at] = other[: rng.randint(0, len(other))]
        else:
            out[at:at] = b"[" * rng.randint(1, 3000)
    return bytes(out)


def selftest(count: int, seed: int) -> int:
    """Run the seeds and ``count`` mutations under plain Python; 0 if all pass."""
    rng = random.Random(seed)
    started = time.perf_counter()
    inputs = [bytes([0, 0]) + s for s in SEEDS] + [bytes([7, 3]) + s for s in SEEDS]
    inputs += [mutate(rng.choice(inputs), rng) for _ in range(count)]
    for number, data in enumerate(inputs):
        try:
            one_input(data)
        except BaseException:
            print(f"input {number} failed: {data!r}", file=sys.stderr)
            raise
    elapsed = time.perf_counter() - started
    print(f"selftest: {len(inputs)} inputs on cores {'+'.join(CORES)} in {elapsed:.1f}s: ok")
    return 0


def write_seeds(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for number, data in enumerate(SEEDS):
        (directory / f"seed-{number:02d}").write_bytes(bytes([0, 0]) + data)


def main(argv: list[str]) -> int:
    logging.disable(logging.CRITICAL)  # bad input is logged on purpose; keep runs fast
    if "--write-seeds" in argv:
        write_seeds(Path(argv[argv.index("--write-seeds") + 1]))
        return 0
    if "--selftest" in argv:
        at = argv.index("--selftest")
        count = int(argv[at + 1]) if len(argv) > at + 1 and argv[at + 1].isdigit() else 1000
        CORES[:] = _available_cores()
        return selftest(count, seed=int(time.time()) if "--random-seed" in argv else 8)
    import atheris  # the 'fuzz' extra

    with atheris.instrument_imports(include=["acp_fast", "fuzz"]):
        import fuzz.driver  # noqa: F401

    CORES[:] = _available_cores()
    atheris.Setup(argv, one_input)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
