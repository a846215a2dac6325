"""
Real Python workers on the unmodified `runpod` SDK (../shared/clients/runpod-python), one handler per
HANDLER value, written as the SDK's users write them. Run by test/jobs.pythonSdk.test.ts through the
process runtime's `images` mapping.
"""

import asyncio
import json
import os
import time

import runpod

WORKER_ID = os.environ.get("RUNPOD_POD_ID", "?")


def plain(job):
    """A plain handler: echo; raise; return {"error"}; progress updates; refresh_worker."""
    inp = job["input"]
    action = inp.get("action")
    if action == "raise":
        raise ValueError(inp.get("message", "bad input"))
    if action == "error":
        return {"error": inp.get("message", "handler said no")}
    if action == "progress":
        for percent in (25, 50):
            # Each update is posted from a thread of its own: spaced, so they arrive in order.
            runpod.serverless.progress_update(job, {"percent": percent})
            time.sleep(0.5)
        # Long enough for the test to read the update while the job runs.
        time.sleep(inp.get("hold", 4))
        return {"done": True}
    if action == "refresh":
        return {"refresh_worker": True, "worker": WORKER_ID}
    return {"echo": inp, "worker": WORKER_ID}


def stream(job):
    """A generator handler (return_aggregate_stream: /status gets the list of chunks)."""
    for i in range(job["input"].get("count", 3)):
        yield f"chunk {i + 1}"


ACTIVE = 0
PEAK = 0


async def concurrent(job):
    """An async handler run several at a time (concurrency_modifier); cancellable mid-run."""
    global ACTIVE, PEAK
    ACTIVE += 1
    PEAK = max(PEAK, ACTIVE)
    try:
        await asyncio.sleep(job["input"].get("seconds", 1))
        return {"peak": PEAK, "worker": WORKER_ID}
    finally:
        ACTIVE -= 1


def _chunk(cid, delta, finish):
    return {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": "py-echo",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}


async def openai_style(job):
    """worker-vllm's shape: `openai_route`/`openai_input` in the input; streams raw SSE text, each event
    cut across yields when the body says `x_split_events`."""
    inp = job["input"]
    route = inp.get("openai_route")
    if not route:
        yield {"echo": inp}
        return
    if route == "/v1/models":
        yield {"object": "list", "data": [{"id": "py-echo", "object": "model", "created": 0, "owned_by": "test"}]}
        return
    body = inp["openai_input"]
    text = body["messages"][-1]["content"]
    cid = f"chatcmpl-{job['id']}"
    if body.get("stream"):
        events = ["data: " + json.dumps(_chunk(cid, {"role": "assistant", "content": ""}, None)) + "\n\n"]
        events += ["data: " + json.dumps(_chunk(cid, {"content": word if i == 0 else " " + word}, None)) + "\n\n" for i, word in enumerate(text.split())]
        events.append("data: " + json.dumps(_chunk(cid, {}, "stop")) + "\n\ndata: [DONE]\n\n")
        for i, event in enumerate(events):
            if i:
                await asyncio.sleep(0.05)
            for piece in _cut(event) if body.get("x_split_events") else [event]:
                yield piece
        return
    n = len(text.split())
    yield {"id": cid, "object": "chat.completion", "created": int(time.time()), "model": "py-echo",
           "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop", "logprobs": None}],
           "usage": {"prompt_tokens": n, "completion_tokens": n, "total_tokens": 2 * n}}


def _cut(event):
    """SSE text cut as worker-vllm may yield it: inside the model name, between the blank line's two
    newlines, and inside `[DONE]`; each piece alone is no whole event."""
    cuts = sorted({event.index("py-") + 3, len(event) - 1} | ({event.index("[DONE]") + 3} if "[DONE]" in event else set()))
    return [event[a:b] for a, b in zip([0] + cuts, cuts + [len(event)])]


HANDLERS = {
    "plain": {"handler": plain},
    "stream": {"handler": stream, "return_aggregate_stream": True},
    "concurrent": {"handler": concurrent, "concurrency_modifier": lambda current: 4},
    "openai": {"handler": openai_style, "concurrency_modifier": lambda current: 4, "return_aggregate_stream": True},
}

if __name__ == "__main__":
    runpod.serverless.start(HANDLERS[os.environ.get("HANDLER", "plain")])
