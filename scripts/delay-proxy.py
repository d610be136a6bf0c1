#!/usr/bin/env python3
"""A TCP proxy on loopback that delays every chunk by a fixed time in each direction, keeping order and pipelining.

For measuring Latch against a database "one network hop away" where the kernel has no netem qdisc:

    python3 scripts/delay-proxy.py --listen 15432 --target 5432 --delay-ms 5 &
    latch bench --database postgres://latch@127.0.0.1:15432/bench ...

Listens on 127.0.0.1 only and forwards to 127.0.0.1 only. Runs until killed (or --seconds, at most 3600).
"""
import argparse
import asyncio
import time


async def pump(reader, writer, delay):
    queue = asyncio.Queue()

    async def deliver():
        while True:
            due, data = await queue.get()
            if data is None:
                break
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        writer.close()

    delivery = asyncio.create_task(deliver())
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            queue.put_nowait((time.monotonic() + delay, data))
    except (ConnectionError, OSError):
        pass
    queue.put_nowait((0, None))
    try:
        await delivery
    except (ConnectionError, OSError):
        pass


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--target", type=int, required=True)
    parser.add_argument("--delay-ms", type=float, default=5.0)
    parser.add_argument("--seconds", type=float, default=3600)
    args = parser.parse_args()
    delay = args.delay_ms / 1000

    async def handle(client_reader, client_writer):
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", args.target)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pump(client_reader, upstream_writer, delay), pump(upstream_reader, client_writer, delay))

    server = await asyncio.start_server(handle, "127.0.0.1", args.listen)
    async with server:
        await asyncio.sleep(min(args.seconds, 3600))


if __name__ == "__main__":
    asyncio.run(main())
