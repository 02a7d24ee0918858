"""The test server playing the policy model: scripted replies, tool calls, faults, over real HTTP through ``openai``.

``gym_integrity.openai_stub.judge_server`` in modes ``policy`` and ``wrong`` is the
model that ``gym-integrity eval`` evaluates in its tests; these tests pin what
it answers, through the real ``openai`` client (sync and async), no mocks.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import openai
import pytest

from gym_integrity.envs.finqa.actions import parse_action
from gym_integrity.grading.reader import extract_answer
from gym_integrity.openai_stub.judge_server import POLICY_DEFAULT_REPLY, WRONG_ANSWER, JudgeServer, write_policy

SUBMIT = {"type": "function", "function": {
    "name": "submit_answer", "description": "Submit the final answer.",
    "parameters": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}}
LOOKUP = {"type": "function", "function": {
    "name": "lookup", "description": "Look a word up.",
    "parameters": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}}}

POLICY = {
    "capital of France": "<answer>Paris</answer>",
    "capital": "<answer>Rome</answer>",  # shorter key: loses to the longer one when both are found
    "multi-turn": ["first thought", "second thought", "<answer>3</answer>"],
    "use a tool": [{"tool": "lookup", "arguments": {"word": "zorblax"}},
                   {"tool": "submit_answer", "arguments": {"answer": "42"}}],
}


def client(server: JudgeServer, **kw) -> openai.OpenAI:
    kw.setdefault("max_retries", 0)
    kw.setdefault("timeout", 10.0)
    return openai.OpenAI(base_url=server.url, api_key="test", **kw)


def ask(c: openai.OpenAI, question: str, assistant_turns: list[str] = (), **kw):
    messages = [{"role": "system", "content": "You are a test. (capital of France)"},  # not the first *user* message
                {"role": "user", "content": question}]
    for turn in assistant_turns:
        messages += [{"role": "assistant", "content": turn}, {"role": "user", "content": "go on"}]
    return c.chat.completions.create(model="policy-under-test", messages=messages, **kw)


@pytest.fixture
def policy_file(tmp_path):
    path = tmp_path / "policy.json"
    write_policy(path, POLICY)
    return path


@pytest.fixture
def server(policy_file):
    with JudgeServer("policy", policy_file=policy_file, hang_s=10.0) as srv:
        yield srv


def test_string_reply_chosen_by_the_first_user_message(server):
    c = client(server)
    answer = ask(c, "What is the capital of France?")
    assert answer.choices[0].message.content == "<answer>Paris</answer>"
    assert answer.choices[0].finish_reason == "stop"
    assert ask(c, "What is the capital of Italy?").choices[0].message.content == "<answer>Rome</answer>"
    assert ask(c, "capital of France", ["x", "y"]).choices[0].message.content == "<answer>Paris</answer>"  # every turn
    assert ask(c, "Something else entirely").choices[0].message.content == POLICY_DEFAULT_REPLY
    assert [r.behaviour for r in server.requests] == ["policy"] * 4
    assert server.requests[0].body["model"] == "policy-under-test"


def test_per_turn_list_by_assistant_messages_then_repeats_the_last(server):
    c = client(server)
    said = [ask(c, "A multi-turn question", ["t"] * n).choices[0].message.content for n in range(5)]
    assert said == ["first thought", "second thought", "<answer>3</answer>", "<answer>3</answer>",
                    "<answer>3</answer>"]


def test_native_tool_calls_round_trip_through_openai(server):
    c = client(server)
    messages = [{"role": "user", "content": "Please use a tool."}]
    first = c.chat.completions.create(model="m", messages=messages, tools=[LOOKUP, SUBMIT])
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    call = choice.message.tool_calls[0]
    assert call.type == "function" and call.function.name == "lookup"
    assert json.loads(call.function.arguments) == {"word": "zorblax"}
    messages += [choice.message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": "a made-up word"}]
    second = c.chat.completions.create(model="m", messages=messages, tools=[LOOKUP, SUBMIT])
    call2 = second.choices[0].message.tool_calls[0]
    assert (call2.function.name, json.loads(call2.function.arguments)) == ("submit_answer", {"answer": "42"})
    assert call2.id != call.id and call.id.startswith("call_")
    assert second.usage.completion_tokens > 0


def test_tool_call_as_text_when_no_tools_were_sent(server):
    c = client(server)
    text = ask(c, "use a tool, in text").choices[0].message.content
    assert text == '<tool_call>{"name": "lookup", "arguments": {"word": "zorblax"}}</tool_call>'
    assert parse_action(text).name == "lookup"
    # tool_choice "none" also gets text
    none = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "use a tool"}],
                                     tools=[LOOKUP], tool_choice="none")
    assert none.choices[0].message.tool_calls is None and none.choices[0].message.content.startswith("<tool_call>")


def test_without_native_tools_a_tools_request_gets_400(policy_file):
    with JudgeServer("policy", policy_file=policy_file, native_tools=False) as srv:
        srv.script("500")  # not taken by the rejected request
        c = client(srv)
        with pytest.raises(openai.BadRequestError) as err:
            c.chat.completions.create(model="m", messages=[{"role": "user", "content": "use a tool"}], tools=[LOOKUP])
        assert err.value.status_code == 400 and "enable-auto-tool-choice" in err.value.message
        assert err.value.body["param"] == "tools" and err.value.body["type"] == "BadRequestError"
        with pytest.raises(openai.InternalServerError):  # the fallback without tools takes the script...
            ask(c, "use a tool")
        assert ask(c, "use a tool").choices[0].message.content.startswith("<tool_call>")  # ...then the policy
        assert [r.behaviour for r in srv.requests] == ["400:tools", "500", "policy"]


def test_wrong_answers_well_formed_and_wrong():
    with JudgeServer("wrong") as srv:
        c = client(srv)
        text = ask(c, "What is 2+2? Put the answer in <answer> tags.").choices[0].message.content
        assert extract_answer(text, "tag").answer == WRONG_ANSWER == extract_answer(text, "boxed").answer
        assert "<tool_call>" not in text
        native = ask(c, "Answer with submit_answer.", tools=[LOOKUP, SUBMIT]).choices[0]
        assert native.finish_reason == "tool_calls"
        assert native.message.tool_calls[0].function.name == "submit_answer"
        assert json.loads(native.message.tool_calls[0].function.arguments) == {"answer": WRONG_ANSWER}
        in_text = ask(c, "End with submit_answer.").choices[0].message.content  # a tool env answered in text
        assert parse_action(in_text).arguments == {"answer": WRONG_ANSWER}
        assert extract_answer(in_text, "either").answer == WRONG_ANSWER


@pytest.mark.parametrize("behaviour, error", [
    ("500", openai.InternalServerError),
    ("404", openai.NotFoundError),
    ("429", openai.RateLimitError),
    ("malformed", ValueError),  # openai raises the json.JSONDecodeError of a 200 with a broken body as is
    ("drop", openai.APIConnectionError),
])
def test_fault_modes_on_chat_completions(server, behaviour, error):
    server.script(behaviour)
    c = client(server)
    with pytest.raises(error):
        ask(c, "capital of France")
    assert ask(c, "capital of France").choices[0].message.content == "<answer>Paris</answer>"
    assert [r.behaviour for r in server.requests] == [behaviour, "policy"]
    assert server.requests[0].path == "/v1/chat/completions"


def test_429_sends_retry_after_and_the_client_honours_it(server):
    server.script("429:0.3")
    with pytest.raises(openai.RateLimitError) as err:
        ask(client(server), "capital of France")
    assert err.value.response.headers["retry-after"] == "0.3"
    server.script("429:0.3")
    start = time.monotonic()
    assert ask(client(server, max_retries=1), "capital of France").choices[0].message.content == "<answer>Paris</answer>"
    assert time.monotonic() - start >= 0.3
    assert [r.behaviour for r in server.requests] == ["429:0.3", "429:0.3", "policy"]


def test_hang_times_out_the_client_or_answers_late_as_the_policy(server):
    server.script("hang:5")
    with pytest.raises(openai.APITimeoutError):
        ask(client(server, timeout=0.3), "capital of France")
    server.script("hang:0.3")
    start = time.monotonic()
    assert ask(client(server), "capital of France").choices[0].message.content == "<answer>Paris</answer>"
    assert time.monotonic() - start >= 0.3


def test_first_requests_fail_then_the_policy_answers(policy_file):
    with JudgeServer("policy", policy_file=policy_file).script("500", "500") as srv:
        answer = ask(client(srv, max_retries=2), "capital of France")  # openai retries 500s (~0.5-1 s each)
        assert answer.choices[0].message.content == "<answer>Paris</answer>"
        assert [r.behaviour for r in srv.requests] == ["500", "500", "policy"]


def test_usage_and_choices(server):
    c = client(server)
    answer = ask(c, "multi-turn, please", n=3)
    assert [ch.index for ch in answer.choices] == [0, 1, 2]
    assert {ch.message.content for ch in answer.choices} == {"first thought"}
    prompt_words = len("You are a test. (capital of France)\nmulti-turn, please".split())
    assert answer.usage.prompt_tokens == prompt_words
    assert answer.usage.completion_tokens == 3 * 2
    assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens
    assert answer.id.startswith("chatcmpl-") and answer.model == "policy-under-test"


def test_policy_file_is_reread_after_a_rewrite(server, policy_file):
    c = client(server)
    assert ask(c, "capital of France").choices[0].message.content == "<answer>Paris</answer>"
    write_policy(policy_file, {"capital of France": "<answer>Lyon</answer>", "": "catch-all"})
    assert ask(c, "capital of France").choices[0].message.content == "<answer>Lyon</answer>"
    assert ask(c, "anything").choices[0].message.content == "catch-all"
    policy_file.write_text(json.dumps({"capital of France": "<answer>Nice</answer>"}))  # a plain rewrite too
    assert ask(c, "capital of France").choices[0].message.content == "<answer>Nice</answer>"
    policy_file.write_text("{not json")
    with pytest.raises(openai.InternalServerError) as err:
        ask(c, "capital of France")
    assert "policy file" in err.value.message
    policy_file.unlink()
    with pytest.raises(openai.InternalServerError):
        ask(c, "capital of France")
    write_policy(policy_file, {"France": "back"})
    assert ask(c, "capital of France").choices[0].message.content == "back"


def test_policy_needs_a_valid_mapping_and_a_file(tmp_path):
    with pytest.raises(ValueError, match="policy_file"):
        JudgeServer("policy")
    with pytest.raises(ValueError, match="policy_file"):
        JudgeServer("score:5").script("policy")
    with pytest.raises(ValueError, match="tool"):
        write_policy(tmp_path / "p.json", {"q": [{"arguments": {}}]})
    with pytest.raises(ValueError, match="empty"):
        write_policy(tmp_path / "p.json", {"q": []})
    assert not (tmp_path / "p.json").exists()


def reassemble(stream) -> tuple[dict, list]:
    """A ``stream=True`` answer put back together, per choice index: text, tool calls, finish reason; and its chunks."""
    chunks, got = list(stream), {}
    for chunk in chunks:
        assert chunk.object == "chat.completion.chunk"
        for choice in chunk.choices:
            slot = got.setdefault(choice.index, {"text": "", "calls": {}, "finish": None})
            slot["text"] += choice.delta.content or ""
            for call in choice.delta.tool_calls or []:
                one = slot["calls"].setdefault(call.index, {"id": call.id, "name": "", "arguments": ""})
                one["name"] += call.function.name or ""
                one["arguments"] += call.function.arguments or ""
            slot["finish"] = choice.finish_reason or slot["finish"]
    return got, chunks


def test_a_streamed_completion_reassembles_to_the_whole_one(server):
    c = client(server)
    for question, kw in [("capital of France", {}), ("A multi-turn question", {"n": 2}),
                         ("use a tool, in text", {}), ("Something else entirely", {})]:
        whole = ask(c, question, **kw)
        got, chunks = reassemble(ask(c, question, stream=True, **kw))  # a refusal raises BadRequestError here
        assert {i: (g["text"], g["finish"]) for i, g in got.items()} == \
            {ch.index: (ch.message.content, ch.finish_reason) for ch in whole.choices}
        assert all(chunk.usage is None for chunk in chunks)  # no usage chunk unless asked for
    assert len(chunks) > 3  # the text came in pieces: a first delta with the role, words, the finish
    assert chunks[0].choices[0].delta.role == "assistant"
    # Native tool calls, and the usage chunk of stream_options.include_usage.
    whole = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "use a tool"}], tools=[LOOKUP])
    got, chunks = reassemble(c.chat.completions.create(model="m", messages=[{"role": "user", "content": "use a tool"}],
                                                       tools=[LOOKUP], stream=True,
                                                       stream_options={"include_usage": True}))
    call = got[0]["calls"][0]
    assert (call["name"], json.loads(call["arguments"]), got[0]["finish"]) == ("lookup", {"word": "zorblax"},
                                                                              "tool_calls")
    assert call["id"].startswith("call_") and got[0]["text"] == ""
    assert chunks[-1].choices == [] and chunks[-1].usage.model_dump() == whole.usage.model_dump()
    assert {r.behaviour for r in server.requests} == {"policy"} and server.requests[-1].body["stream"] is True


def test_a_streamed_answer_from_the_judge_and_the_stream_faults():
    with JudgeServer("score:6") as srv:
        c = client(srv)
        whole = ask(c, "grade me").choices[0].message.content
        got, _ = reassemble(ask(c, "grade me", stream=True))
        assert got[0]["text"] == whole and whole.endswith("<score>6</score>") and got[0]["finish"] == "stop"
        srv.script("500", "malformed")
        with pytest.raises(openai.InternalServerError):
            list(ask(c, "grade me", stream=True))
        with pytest.raises(ValueError):  # one cut-off event: the json.JSONDecodeError, as for a whole answer
            list(ask(c, "grade me", stream=True))
        with pytest.raises(openai.BadRequestError, match="chat/completions only"):
            c.responses.create(model="m", input="grade me", stream=True)
        assert [r.behaviour for r in srv.requests] == ["score:6", "score:6", "500", "malformed", "400:stream"]


def test_responses_api_tool_call(server):
    c = client(server)
    tools = [{"type": "function", "name": "lookup", "parameters": LOOKUP["function"]["parameters"]}]
    first = c.responses.create(model="m", input=[{"role": "user", "content": "use a tool"}], tools=tools)
    call = first.output[0]
    assert call.type == "function_call" and call.name == "lookup" and json.loads(call.arguments) == {"word": "zorblax"}
    second = c.responses.create(model="m", input=[{"role": "user", "content": "use a tool"}, call.model_dump(),
                                                  {"type": "function_call_output", "call_id": call.call_id,
                                                   "output": "a made-up word"}])
    assert second.output_text == '<tool_call>{"name": "submit_answer", "arguments": {"answer": "42"}}</tool_call>'


def test_async_client_runs_requests_concurrently(server):
    server.latency_s = 0.3

    async def run() -> list[str]:
        async with openai.AsyncOpenAI(base_url=server.url, api_key="test", max_retries=0, timeout=20.0) as c:
            answers = await asyncio.gather(*[
                c.chat.completions.create(model="m", messages=[{"role": "user", "content": f"capital of France {i}"}])
                for i in range(32)])
        return [a.choices[0].message.content for a in answers]

    start = time.monotonic()
    assert asyncio.run(run()) == ["<answer>Paris</answer>"] * 32
    elapsed = time.monotonic() - start
    assert server.max_in_flight >= 16, server.max_in_flight
    assert elapsed < 32 * 0.3 / 4, elapsed  # serial would take 9.6 s


def test_command_line_policy_server(tmp_path, policy_file):
    proc = subprocess.Popen(
        [sys.executable, "-m", "gym_integrity.openai_stub.judge_server", "--port", "0", "--mode", "policy",
         "--policy-file", str(policy_file), "--no-native-tools", "--script", "500"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        line = proc.stdout.readline()
        assert "test policy (policy) serving at http://127.0.0.1:" in line, \
            proc.stderr.read() if proc.poll() is not None else line
        c = openai.OpenAI(base_url=line.split("serving at ", 1)[1].split()[0], api_key="t", max_retries=0)
        with pytest.raises(openai.BadRequestError):
            c.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], tools=[SUBMIT])
        with pytest.raises(openai.InternalServerError):
            c.chat.completions.create(model="m", messages=[{"role": "user", "content": "capital of France"}])
        answer = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "capital of France"}])
        assert answer.choices[0].message.content == "<answer>Paris</answer>"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
