"""A plain agent loop over the openai client, run by loopbench through the loop protocol (docs/loop-protocol.md):

    loopbench run --loop-cmd 'python examples/simple_loop.py' --loop-name simple-loop

It reads one job (JSON) on stdin, calls the model until it answers in text or `max_model_calls` is reached,
executes each tool call through loopbench's ledger, and prints its answer as one JSON line. It knows nothing of
loopbench beyond that protocol: no loopbench import.
"""

import json
import re
import sys

import httpx
import openai

job = json.loads(sys.stdin.readline())
limit = job["limits"].get("max_model_calls")
client = openai.OpenAI(base_url=job["openai_base_url"], api_key=job["api_key"])
ledger = httpx.Client(headers={job["ledger"]["header"]: job["ledger"]["token"]}, timeout=None)
tools = [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                           "parameters": t["parameters"]}} for t in job["tools"]]
messages = [{"role": "user", "content": job["prompt"]}]
requests = input_tokens = output_tokens = 0
answer = {"limits": {"max_model_calls": f"for-loop of {limit} requests"} if limit else {}}
rules = job.get("tool_choice", [])
if rules:
    answer["tool_choice"] = "tool_choice= per request, from the results just before it"


def tool_choice() -> object:
    """The job's rule for the next request: the opening call (no tool result yet) or the call after a result."""
    trailing = []
    for m in reversed(messages):
        if m["role"] != "tool":
            break
        trailing.append(m["tool_call_id"].removeprefix("call_"))
    opening = not any(m["role"] == "tool" for m in messages)
    for rule in rules:
        if (opening if rule["after"] is None else any(re.match(rule["after"], i) for i in trailing)):
            c = rule["choice"]
            return c if c in ("auto", "none", "required") else {"type": "function", "function": {"name": c}}
    return openai.NOT_GIVEN


def run_tool(call) -> str:
    body = {"tool": call.function.name, "args": json.loads(call.function.arguments or "{}"),
            "call_id": call.id.removeprefix("call_")}
    return ledger.post(job["ledger"]["url"], json=body).json()["text"]


try:
    while limit is None or requests < limit:
        response = client.chat.completions.create(model=job["model"], messages=messages, tools=tools,
                                                  tool_choice=tool_choice())
        requests += 1  # retries inside the client are not counted: the server counts those
        input_tokens += response.usage.prompt_tokens if response.usage else 0
        output_tokens += response.usage.completion_tokens if response.usage else 0
        message = response.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            answer.update(ended="returned", final_text=message.content, finish_reason=response.choices[0].finish_reason)
            break
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": run_tool(call)})
    else:
        answer.update(ended="returned", limit="steps")
except (openai.APIError, json.JSONDecodeError) as exc:  # the client lets a body that is not JSON escape bare
    answer.update(ended="raised", failure="model", exception_type=type(exc).__name__, exception_message=str(exc))
answer.update(requests=requests, input_tokens=input_tokens, output_tokens=output_tokens)
print(json.dumps(answer))
