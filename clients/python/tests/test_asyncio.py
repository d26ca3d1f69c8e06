"""The README's asyncio bridge: the leader's task is cancelled when the leadership ends."""

from __future__ import annotations

import asyncio

import elector


def test_the_asyncio_recipe_cancels_the_task_when_the_leadership_ends(gateway, election):
    events = []
    started: "list[asyncio.Event]" = []

    async def run_billing(term: int) -> None:
        events.append("started %d" % term)
        started[0].set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            events.append("cancelled %d" % term)
            raise

    async def lead(candidacy: elector.Candidacy) -> None:
        loop = asyncio.get_running_loop()
        while True:
            leadership = await asyncio.to_thread(candidacy.wait_leadership)
            if leadership is None:
                return
            task = asyncio.create_task(run_billing(leadership.term))
            leadership.add_done_callback(lambda _: loop.call_soon_threadsafe(task.cancel))
            await asyncio.gather(task, return_exceptions=True)

    async def main() -> None:
        started.append(asyncio.Event())
        with elector.Candidacy(gateway.url, election, "a", ttl=30) as candidacy:
            runner = asyncio.create_task(lead(candidacy))
            await asyncio.wait_for(started[0].wait(), 10)
            await asyncio.to_thread(candidacy.close)
            await asyncio.wait_for(runner, 10)

    asyncio.run(main())
    assert events == ["started 1", "cancelled 1"]
