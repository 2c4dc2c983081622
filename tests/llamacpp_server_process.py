"""The bundled SmolLM2 GGUF served by llama.cpp (xllamacpp) in a process of its own, as a user would run
llama-server: `python -m tests.llamacpp_server_process` prints the server's /v1 URL, serves until stdin
closes. One slot, flash attention off (EmbeddedServer's settings), so scores are exact and reproducible."""

from __future__ import annotations

import sys

from probe.backends.llamacpp import EmbeddedServer
from probe.backends.local import default_gguf


def main() -> None:
    server = EmbeddedServer(default_gguf(), slots=1, threads=1)
    print(server.base_url, flush=True)
    sys.stdin.read()
    server.stop()


if __name__ == "__main__":
    main()
