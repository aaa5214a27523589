"""The scripted model server against the Claude Code CLI bundled in claude-agent-sdk, driven by the SDK's
`query()` with an in-process SDK MCP tool (offered as `mcp__loopbench__get_ticket`): one tool call end to end,
routed by ANTHROPIC_API_KEY, with a scripted 529 the CLI retries."""

from __future__ import annotations

import pytest

TIER = "unit"

R = "[loopbench-receipt:L1]"
SCRIPT = [
    {"id": "read_ticket", "calls": [{"id": "ticket_1", "tool": "get_ticket", "args": {"ticket_id": "T-1"}}],
     "fail_first": [{"status": 529}], "usage": {"input_tokens": 1200, "output_tokens": 30}},
    {"id": "draft", "after": {"call": "ticket_1", "result": "receipt"}, "text": "Draft: refund accepted (POL-7).",
     "usage": {"input_tokens": 1500, "output_tokens": 70}},
]


@pytest.mark.process
async def test_claude_cli_one_tool_call_end_to_end(model_server, make_scenario, register, tmp_path):
    sdk = pytest.importorskip("claude_agent_sdk")
    server, url = model_server
    run_id, key = register(make_scenario(SCRIPT))
    executed: list[dict] = []

    @sdk.tool("get_ticket", "Read a support ticket by id.",
              {"type": "object", "properties": {"ticket_id": {"type": "string"}}, "required": ["ticket_id"]})
    async def get_ticket(args: dict) -> dict:
        executed.append(args)
        return {"content": [{"type": "text", "text": f"Ticket {args['ticket_id']}: refund please. {R}"}]}

    (tmp_path / "config").mkdir()
    (tmp_path / "cwd").mkdir()
    options = sdk.ClaudeAgentOptions(
        mcp_servers={"loopbench": sdk.create_sdk_mcp_server("loopbench", tools=[get_ticket])},
        tools=[], allowed_tools=["mcp__loopbench__get_ticket"], setting_sources=[], strict_mcp_config=True,
        cwd=str(tmp_path / "cwd"), model="claude-sonnet-4-5",
        env={"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": key, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
             "CLAUDE_CONFIG_DIR": str(tmp_path / "config"), "CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS": "1",
             # nothing written to the real home (the CLI keeps MCP logs under XDG_CACHE_HOME)
             "HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
             "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"), "XDG_DATA_HOME": str(tmp_path / "xdg-data")},
    )
    messages = [m async for m in sdk.query(prompt="Read ticket T-1 and draft a reply.", options=options)]
    result = messages[-1]
    assert isinstance(result, sdk.ResultMessage), messages
    assert (result.subtype, result.is_error, result.result) == ("success", False, "Draft: refund accepted (POL-7).")
    # the CLI's own accounting equals the scripted usage of the two served responses (the 529 served none)
    assert (result.usage["input_tokens"], result.usage["output_tokens"]) == (1200 + 1500, 30 + 70)
    assert result.total_cost_usd == pytest.approx((2700 * 3 + 100 * 15) / 1e6)
    assert executed == [{"ticket_id": "T-1"}]
    uses = [b for m in messages if isinstance(m, sdk.AssistantMessage) for b in m.content
            if isinstance(b, sdk.ToolUseBlock)]
    assert [(b.id, b.name) for b in uses] == [("toolu_ticket_1", "mcp__loopbench__get_ticket")]

    log = server.requests(run_id)
    assert [(e.status, e.retry, e.served_turn) for e in log] == [(529, False, "read_ticket"),
                                                                 (200, True, "read_ticket"), (200, False, "draft")]
    assert all(e.path == "/v1/messages?beta=true" and e.stream and e.model == "claude-sonnet-4-5" for e in log)
    assert log[0].tools_offered == ["mcp__loopbench__get_ticket"]
    assert [(r.call_id, r.status) for r in log[2].tool_results] == [("ticket_1", "receipt")]
    # the CLI's own retry loop waits max(retry-after, its backoff of 500 ms +0..25%): the 10 ms
    # retry-after-ms the server sends cannot make it faster (measured: ~0.56 s)
    assert 0.45 <= log[1].t_s - log[0].t_s < 1.5
    assert server.violations(run_id) == []
